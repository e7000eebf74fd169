// How a rank tells the controller what happened (control events: run info, step ends, errors):
// through the recorder to the pipe named by SHARDSCOPE_EVENT_FD. Started by torchrun/srun instead
// (no pipe), rank 0 prints progress itself.
#pragma once

#include "trace/events.h"

namespace shardscope::engine {

class RankRecorder;

class RankReporter {
 public:
  // Sends through `recorder`'s writer. `toRecording`: with no controller, the rank's own recording
  // (its --trace-dir file) keeps its steps, placement and errors too, beside what the terminal is
  // told.
  RankReporter(RankRecorder& recorder, int rank, bool toRecording = false);
  void send(const trace::Event& event);
  bool hasController() const { return fd_ >= 0; }

 private:
  void tellTerminal(const trace::Event& event) const;

  RankRecorder& recorder_;
  int rank_;
  int fd_ = -1;
  bool toRecording_ = false;
};

}  // namespace shardscope::engine
