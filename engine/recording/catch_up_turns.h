// Who runs a loop that drains what training produces: a rank's writer draining its event queue
// into the pipe (engine/recording/recorder.h), or the controller's loop reading the ranks' pipes
// (engine/launch/run_observer.cpp).
//
// Normally the thread that owns the loop, at nice 19: when it competes with training for a core,
// training wins, and the loop catches up while the ranks wait on communication. Measured on two
// cores, the controller's loop at normal priority instead slowed a run by about 10 %. But beside
// other busy processes a nice-19 thread can starve for seconds; what it drains then fills, and
// events are dropped (4.7 million of about 5.9 million in a 3,000-step run beside two busy loops,
// where the controller fell behind; beside four, the ranks' writers fell behind too). And an
// unprivileged thread cannot raise its priority back once it lowered it.
//
// So a second thread, at the priority the owner had, watches the backlog and takes the loop over
// while it is more than half full, handing it back once it has stayed under an eighth for a second
// (under lasting contention the loop then stays with the helper, not changing hands on every
// fill, and each change of hands can wait on the starved thread's pass): training pays for
// the loop's CPU only while the loop would otherwise lose events. The two never run the loop at
// once (a mutex), and the low-priority thread steps aside while the helper wants its turn, so it
// cannot keep the helper out; the helper waits at most for the pass the other is in.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace shardscope::engine {

class CatchUpTurns {
 public:
  // `backlog`: how full what the loop drains is, 0 to 1; called on the helper's thread at any
  // time, so it must be safe there. `pass`: one pass of the loop, which must not wait for more
  // to come. `done`: whether the loop has finished. Those two are called only by whichever thread
  // holds the turn. `pause`: the wait between passes (for more to come, a moment), outside the
  // turn: a low-priority thread that holds the turn while it waits, and then waits for a core to
  // give it back, would keep the helper out. Construct it on the thread whose priority the helper
  // should have: the helper starts here.
  CatchUpTurns(std::function<double()> backlog, std::function<void()> pass, std::function<void()> pause,
               std::function<bool()> done);
  ~CatchUpTurns();
  CatchUpTurns(const CatchUpTurns&) = delete;
  CatchUpTurns& operator=(const CatchUpTurns&) = delete;

  // Runs the loop until done at nice 19 on the calling thread (its priority restored after,
  // where the caller may raise it), yielding to the helper while the backlog is high.
  void run();
  // How long the helper held the loop, in all.
  double helperSeconds() const { return static_cast<double>(helperNs_.load()) / 1e9; }

 private:
  void helperLoop();

  std::function<double()> backlog_;
  std::function<void()> pass_;
  std::function<void()> pause_;
  std::function<bool()> done_;
  std::mutex turn_;
  std::condition_variable turnFree_;  // the helper left the loop
  std::atomic<bool> helperWants_{false};
  std::atomic<bool> finished_{false};
  std::atomic<int64_t> helperNs_{0};
  std::mutex helperSleep_;
  std::condition_variable helperWake_;  // finished: the helper stops watching at once
  std::thread helper_;                  // last: started once everything above exists
};

}  // namespace shardscope::engine
