// The controller's loop is taken over by a normal-priority helper while a rank's pipe backs up, and
// only then (engine/launch/observer_turns.h).
#include "engine/launch/observer_turns.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

namespace shardscope {
namespace {

using Clock = std::chrono::steady_clock;

// A pipe of 64 KiB holding `bytes`, its write end closed once filled.
struct FilledPipe {
  int readFd = -1;
  explicit FilledPipe(size_t bytes) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    EXPECT_EQ(::fcntl(fds[0], F_SETPIPE_SZ, 65536), 65536);
    const std::string data(bytes, 'x');
    EXPECT_EQ(::write(fds[1], data.data(), data.size()), static_cast<ssize_t>(bytes));
    ::close(fds[1]);
    readFd = fds[0];
  }
  ~FilledPipe() { ::close(readFd); }
  size_t read(size_t most) const {
    char buffer[4096];
    const ssize_t n = ::read(readFd, buffer, std::min(most, sizeof buffer));
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
};

// The loop's own thread stands for one starved of CPU: it reads nothing until the helper has had a
// turn, or for `starvedFor` (then reads on, so the loop ends whatever happens). The helper reads
// 4 KiB a pass.
struct StarvedLoop {
  const FilledPipe& pipe;
  size_t total;
  std::chrono::milliseconds starvedFor;
  std::thread::id caller = std::this_thread::get_id();
  Clock::time_point start = Clock::now();
  size_t read = 0;
  std::set<std::thread::id> threads;
  int helperPasses = 0;

  void pass() {
    threads.insert(std::this_thread::get_id());
    if (std::this_thread::get_id() != caller) {
      ++helperPasses;
      read += pipe.read(4096);
    } else if (helperPasses > 0 || Clock::now() - start > starvedFor) {
      read += pipe.read(4096);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  bool done() const { return read == total; }
};

// Runs `loop` over `pipe` until it has read everything; how long the helper held it.
double runTurns(const FilledPipe& pipe, StarvedLoop& loop) {
  ObserverTurns turns(
      {pipe.readFd}, [&] { loop.pass(); }, [&] { return loop.done(); });
  turns.run();
  return turns.helperSeconds();
}

TEST(ObserverTurns, AHelperTakesTheLoopOverWhileAPipeIsMoreThanHalfFullAndHandsItBack) {
  const size_t total = 48 * 1024;  // three quarters of the pipe
  FilledPipe pipe(total);
  StarvedLoop loop{pipe, total, std::chrono::milliseconds(5000)};
  const double helperSeconds = runTurns(pipe, loop);
  EXPECT_EQ(loop.read, total);
  EXPECT_EQ(loop.threads.size(), 2u) << "the helper never ran the loop";
  // It read down to an eighth of the pipe (8 KiB) and no further: 40 KiB, in 4 KiB passes.
  EXPECT_EQ(loop.helperPasses, 10);
  EXPECT_GT(helperSeconds, 0);
  // The loop's own thread finished the last eighth once the helper had left, well before it
  // would have read on its own.
  EXPECT_LT(Clock::now() - loop.start, std::chrono::milliseconds(5000));
}

TEST(ObserverTurns, ThePipesUnderHalfFullLeaveTheLoopToItsOwnThread) {
  const size_t total = 24 * 1024;  // three eighths of the pipe
  FilledPipe pipe(total);
  StarvedLoop loop{pipe, total, std::chrono::milliseconds(300)};
  const double helperSeconds = runTurns(pipe, loop);
  EXPECT_EQ(loop.read, total);
  EXPECT_EQ(loop.threads.size(), 1u);
  EXPECT_EQ(helperSeconds, 0.0);
}

TEST(ObserverTurns, TheLoopRunsAtTheLowestPriorityAndTheCallerGetsItsOwnBack) {
  const int before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  int during = before;
  bool done = false;
  ObserverTurns turns(
      {},
      [&] {
        during = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
        done = true;
      },
      [&] { return done; });
  turns.run();
  EXPECT_EQ(during, 19);
  // Raising it back needs privilege (root here; a user's run keeps 19 on this thread).
  if (::geteuid() == 0) EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), before);
}

}  // namespace
}  // namespace shardscope
