// A loop that drains is taken over by a normal-priority helper while what it drains backs up, and
// only then (engine/recording/catch_up_turns.h): here the controller's loop over a rank's pipe
// (engine/launch/pipe_backlog.h).
#include "engine/recording/catch_up_turns.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "engine/launch/pipe_backlog.h"

namespace shardscope::engine {
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
// turn, or for `starvedFor` (then reads on). The helper reads 4 KiB a pass. The loop is done once
// everything is read and `lastsAtLeast` has passed.
struct StarvedLoop {
  const FilledPipe& pipe;
  size_t total;
  std::chrono::milliseconds starvedFor;
  std::chrono::milliseconds lastsAtLeast{0};
  std::thread::id caller = std::this_thread::get_id();
  Clock::time_point start = Clock::now();
  size_t read = 0;
  std::set<std::thread::id> threads;
  int helperPasses = 0;
  size_t readByHelper = 0;
  std::thread::id lastPass;

  void pass() {
    threads.insert(lastPass = std::this_thread::get_id());
    if (std::this_thread::get_id() != caller) {
      ++helperPasses;
      const size_t n = pipe.read(4096);
      read += n;
      readByHelper += n;
    } else if (helperPasses > 0 || Clock::now() - start > starvedFor) {
      read += pipe.read(4096);
    }
  }
  bool done() const { return read == total && Clock::now() - start >= lastsAtLeast; }
};

// Runs `loop` over `pipe` until done, a millisecond between passes; how long the helper held it.
double runTurns(const FilledPipe& pipe, StarvedLoop& loop) {
  const PipeBacklog backlog({pipe.readFd});
  CatchUpTurns turns([&] { return backlog.fullest(); }, [&] { loop.pass(); },
                     [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }, [&] { return loop.done(); });
  turns.run();
  return turns.helperSeconds();
}

TEST(CatchUpTurns, AHelperTakesTheLoopOverWhileAPipeIsMoreThanHalfFullAndHandsItBackOnceCalm) {
  const size_t total = 48 * 1024;  // three quarters of the pipe
  FilledPipe pipe(total);
  StarvedLoop loop{pipe, total, std::chrono::milliseconds(10000), std::chrono::milliseconds(3000)};
  const double helperSeconds = runTurns(pipe, loop);
  EXPECT_EQ(loop.read, total);
  EXPECT_EQ(loop.threads.size(), 2u) << "the helper never ran the loop";
  // The helper read it all (it stays until the pipe has been calm for a second), then handed the
  // loop back: the last passes were the loop's own thread's, long before it would have read alone.
  EXPECT_EQ(loop.readByHelper, total);
  EXPECT_GE(helperSeconds, 1.0);
  EXPECT_LT(helperSeconds, 2.5);
  EXPECT_EQ(loop.lastPass, loop.caller);
  EXPECT_LT(Clock::now() - loop.start, std::chrono::milliseconds(10000));
}

TEST(CatchUpTurns, ThePipesUnderHalfFullLeaveTheLoopToItsOwnThread) {
  const size_t total = 24 * 1024;  // three eighths of the pipe
  FilledPipe pipe(total);
  StarvedLoop loop{pipe, total, std::chrono::milliseconds(300)};
  const double helperSeconds = runTurns(pipe, loop);
  EXPECT_EQ(loop.read, total);
  EXPECT_EQ(loop.threads.size(), 1u);
  EXPECT_EQ(helperSeconds, 0.0);
}

TEST(CatchUpTurns, TheLoopRunsAtTheLowestPriorityAndTheCallerGetsItsOwnBack) {
  const int before = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  int during = before;
  bool done = false;
  CatchUpTurns turns([] { return 0.0; }, [] {},
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
}  // namespace shardscope::engine
