// A step that takes long (a gpt with a long --seq on a CPU takes minutes) says what the ranks are
// doing instead of leaving the terminal silent: each time another interval passes with no step
// ending, one line with how long the step has run and each rank's last event.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "trace/events.h"

namespace shardscope::app {

class SlowStepNotice {
 public:
  using Clock = std::chrono::steady_clock;

  SlowStepNotice(int ranks, int steps, Clock::time_point start, std::chrono::seconds every = std::chrono::seconds(10));

  void event(const trace::Event& event);            // every event a rank sends, as it arrives
  void stepEnded(int step, Clock::time_point now);  // once every rank has finished `step`
  // "step 2/5 has run 20 s: rank 0 backward blocks.1 ended in step 2, rank 1 ..." when another
  // interval has passed since the last step ended (or the run began) or the last line; else "".
  std::string poll(Clock::time_point now);

 private:
  // Per rank, its last event that says what it does (described only when a line is due: a run
  // sends millions).
  std::vector<trace::Event> lastTelling_;
  int steps_;
  int step_ = 0;  // the step running now, 0-based
  Clock::time_point stepBegan_;
  std::chrono::seconds every_;
  int told_ = 0;  // lines printed for this step
};

}  // namespace shardscope::app
