#include "engine/recording/catch_up_turns.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <utility>

namespace shardscope::engine {

namespace {

using Clock = std::chrono::steady_clock;

// How often the helper looks at the backlog: a half-full 1 MiB pipe or event queue holds a few
// hundred milliseconds of a busy rank's events.
constexpr auto kWatchInterval = std::chrono::milliseconds(20);
constexpr double kBehind = 0.5;                     // more than half full: the helper takes over
constexpr double kCaughtUp = 0.125;                 // under an eighth ...
constexpr auto kCalmFor = std::chrono::seconds(1);  // ... for this long: it hands back

// Per-thread nice, restored on leaving (where the caller may: raising it back needs privilege).
class LowerPriorityWhileAlive {
 public:
  LowerPriorityWhileAlive() : tid_(static_cast<id_t>(::gettid())), previous_(::getpriority(PRIO_PROCESS, tid_)) {
    ::setpriority(PRIO_PROCESS, tid_, 19);
  }
  ~LowerPriorityWhileAlive() { ::setpriority(PRIO_PROCESS, tid_, previous_); }
  LowerPriorityWhileAlive(const LowerPriorityWhileAlive&) = delete;
  LowerPriorityWhileAlive& operator=(const LowerPriorityWhileAlive&) = delete;

 private:
  id_t tid_;
  int previous_;
};

}  // namespace

CatchUpTurns::CatchUpTurns(std::function<double()> backlog, std::function<void()> pass, std::function<void()> pause,
                           std::function<bool()> done)
    : backlog_(std::move(backlog)), pass_(std::move(pass)), pause_(std::move(pause)), done_(std::move(done)) {
  // Started before the owner lowers its own priority, so the helper keeps the owner's.
  helper_ = std::thread([this] { helperLoop(); });
}

CatchUpTurns::~CatchUpTurns() {
  finished_.store(true);
  helperWake_.notify_all();
  if (helper_.joinable()) helper_.join();
}

void CatchUpTurns::run() {
  LowerPriorityWhileAlive lowerPriority;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(turn_);
      turnFree_.wait(lock, [this] { return !helperWants_.load(); });
      if (done_()) {
        // Said while the turn is still held: a helper waiting for it then runs nothing of the
        // loop's after it, as the owner goes on to what follows the loop.
        finished_.store(true);
        break;
      }
      pass_();
    }
    pause_();
  }
  helperWake_.notify_all();
}

void CatchUpTurns::helperLoop() {
  while (!finished_.load()) {
    {
      std::unique_lock<std::mutex> lock(helperSleep_);
      helperWake_.wait_for(lock, kWatchInterval, [this] { return finished_.load(); });
    }
    if (finished_.load() || backlog_() <= kBehind) continue;
    helperWants_.store(true);  // the low-priority thread steps aside after the pass it is in
    {
      std::lock_guard<std::mutex> lock(turn_);
      const auto start = Clock::now();
      auto calmSince = Clock::time_point::max();
      while (!finished_.load() && !done_()) {
        pass_();
        const auto now = Clock::now();
        if (backlog_() > kCaughtUp) {
          calmSince = Clock::time_point::max();
        } else if (calmSince == Clock::time_point::max()) {
          calmSince = now;
        } else if (now - calmSince >= kCalmFor) {
          break;
        }
        pause_();
      }
      helperNs_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
      helperWants_.store(false);
    }
    turnFree_.notify_all();
  }
}

}  // namespace shardscope::engine
