#include "engine/launch/observer_turns.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <utility>

namespace shardscope {

namespace {

using Clock = std::chrono::steady_clock;

// How often the helper looks at the pipes: a 1 MiB pipe (engine/launch/rank_processes.cpp) half
// full holds a few hundred milliseconds of a busy rank's events, and its queue seconds more.
constexpr auto kWatchInterval = std::chrono::milliseconds(20);

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

int64_t bytesWaiting(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

}  // namespace

ObserverTurns::ObserverTurns(const std::vector<int>& pipeFds, std::function<void()> iterate, std::function<bool()> done)
    : iterate_(std::move(iterate)), done_(std::move(done)) {
  for (int fd : pipeFds) {
    const int copy = fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy < 0) continue;  // nothing to watch there; the loop still reads it
    const int size = ::fcntl(copy, F_GETPIPE_SZ);
    watched_.push_back(copy);
    capacities_.push_back(size > 0 ? size : 65536);
  }
  // Started before the caller lowers its own priority, so the helper keeps the caller's.
  helper_ = std::thread([this] { helperLoop(); });
}

ObserverTurns::~ObserverTurns() {
  finished_.store(true);
  helperWake_.notify_all();
  if (helper_.joinable()) helper_.join();
  for (int fd : watched_) ::close(fd);
}

void ObserverTurns::run() {
  LowerPriorityWhileAlive lowerPriority;
  for (;;) {
    std::unique_lock<std::mutex> lock(turn_);
    turnFree_.wait(lock, [this] { return !helperWants_.load(); });
    if (done_()) break;
    iterate_();
  }
  finished_.store(true);
  helperWake_.notify_all();
}

void ObserverTurns::helperLoop() {
  while (!finished_.load()) {
    {
      std::unique_lock<std::mutex> lock(helperSleep_);
      helperWake_.wait_for(lock, kWatchInterval, [this] { return finished_.load(); });
    }
    if (finished_.load() || !pipesBehind()) continue;
    helperWants_.store(true);  // the low-priority thread steps aside after the pass it is in
    {
      std::lock_guard<std::mutex> lock(turn_);
      const auto start = Clock::now();
      while (!finished_.load() && !done_() && !pipesCaughtUp()) iterate_();
      helperNs_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
      helperWants_.store(false);
    }
    turnFree_.notify_all();
  }
}

bool ObserverTurns::pipesBehind() const {
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (bytesWaiting(watched_[i]) > capacities_[i] / 2) return true;
  }
  return false;
}

bool ObserverTurns::pipesCaughtUp() const {
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (bytesWaiting(watched_[i]) > capacities_[i] / 8) return false;
  }
  return true;
}

}  // namespace shardscope
