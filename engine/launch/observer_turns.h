// Who runs the controller's loop (reading the ranks' pipes, merging, storing, writing outputs).
//
// Normally the thread that started the run, at nice 19: when it competes with the ranks for a
// core the ranks win, and it catches up while they wait on communication. Measured on two cores,
// that costs training nothing, where the same loop at normal priority slowed the run by about 10 %.
// But beside other busy processes a nice-19 thread can starve for seconds; the ranks' pipes and
// queues then fill and events are dropped (4.7 million of about 5.9 million in a 3,000-step run
// beside two busy loops). And an unprivileged thread cannot raise its priority back once it lowered it.
//
// So a second thread, at the priority the caller had, watches the pipes' backlog and takes the
// loop over while any pipe is more than half full, handing it back once every pipe is nearly
// empty: training pays for the controller's CPU only while the controller would otherwise lose
// events. The two never run the loop at once (a mutex), and the low-priority thread steps aside
// while the helper wants its turn, so it cannot keep the helper out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shardscope {

class ObserverTurns {
 public:
  // `pipeFds`: the ranks' event pipes (read ends) to watch; duplicated here, so the loop may close
  // its own. `iterate`: one pass of the loop. `done`: whether the loop has finished; both are
  // called only by whichever thread holds the turn.
  ObserverTurns(const std::vector<int>& pipeFds, std::function<void()> iterate, std::function<bool()> done);
  ~ObserverTurns();
  ObserverTurns(const ObserverTurns&) = delete;
  ObserverTurns& operator=(const ObserverTurns&) = delete;

  // Runs the loop until done at nice 19 on the calling thread (its priority restored after),
  // yielding to the helper while the pipes back up.
  void run();
  // How long the helper held the loop, in all.
  double helperSeconds() const { return helperNs_.load() / 1e9; }

 private:
  void helperLoop();
  bool pipesBehind() const;    // some pipe is more than half full
  bool pipesCaughtUp() const;  // every pipe is under an eighth full

  std::vector<int> watched_;         // our duplicates of the pipes
  std::vector<int64_t> capacities_;  // each pipe's size in bytes
  std::function<void()> iterate_;
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

}  // namespace shardscope
