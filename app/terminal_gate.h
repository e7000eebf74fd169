// `run --step-gate` in a terminal: says where the ranks wait and reads the user's answer from
// standard input, one line per command (Enter: one event group on; "c": continue to the end;
// "q": stop). Standard input closed or at its end means continue, so a gated run started without
// a terminal never hangs.
#pragma once

#include <string>

#include "engine/launch/run_types.h"

namespace shardscope::app {

class TerminalGate {
 public:
  explicit TerminalGate(int inputFd = 0) : inputFd_(inputFd) {}

  void show(const engine::GateStatus& status);  // prints a line when every rank waits at a new place
  engine::GateCommand command();                // the next command typed, without waiting for one
  bool stopRequested() const { return stop_; }

 private:
  int inputFd_;
  std::string pending_;  // typed, not yet a whole line
  bool inputEnded_ = false;
  bool stop_ = false;
  std::string shown_;
};

}  // namespace shardscope::app
