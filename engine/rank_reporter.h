// How a rank tells the controller what happened (control events: run info, step ends, errors):
// through the recorder to the pipe named by SHARDSCOPE_EVENT_FD. Started by torchrun/srun instead
// (no pipe), rank 0 prints progress itself.
#pragma once

#include "trace/events.h"

namespace shardscope {

class RankReporter {
 public:
  explicit RankReporter(int rank);
  void send(const trace::Event& event);
  bool hasController() const { return fd_ >= 0; }

 private:
  int rank_;
  int fd_ = -1;
};

}  // namespace shardscope
