// How full the ranks' event pipes are, for the controller's loop to tell when it falls behind
// (engine/recording/catch_up_turns.h). Watches its own duplicates of the pipes, so it can be asked
// from another thread while the loop closes its ends.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope::engine {

class PipeBacklog {
 public:
  explicit PipeBacklog(const std::vector<int>& pipeFds);  // read ends; -1s are skipped
  ~PipeBacklog();
  PipeBacklog(const PipeBacklog&) = delete;
  PipeBacklog& operator=(const PipeBacklog&) = delete;

  // The fullest pipe's bytes waiting over its capacity: 0 (or none watched) to 1.
  double fullest() const;

 private:
  std::vector<int> watched_;
  std::vector<int64_t> capacities_;
};

}  // namespace shardscope::engine
