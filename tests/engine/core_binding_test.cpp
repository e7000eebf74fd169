// How --bind-cores rank splits the cores a run may use among the ranks on a host.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "engine/comm/communicator.h"
#include "engine/launch/core_binding.h"

namespace shardscope::engine {
namespace {

using Cores = std::vector<int>;

TEST(CoreBinding, EqualConsecutiveSlicesInOrder) {
  Cores sixteen;
  for (int c = 0; c < 16; ++c) sixteen.push_back(c);
  EXPECT_EQ(coreSlice(sixteen, 0, 4), (Cores{0, 1, 2, 3}));
  EXPECT_EQ(coreSlice(sixteen, 3, 4), (Cores{12, 13, 14, 15}));
  EXPECT_EQ(coreSlice(sixteen, 1, 1), Cores{}) << "a local rank beyond the local world has none";
}

TEST(CoreBinding, LeftoverCoresGoToTheFirstRanks) {
  Cores ten;
  for (int c = 0; c < 10; ++c) ten.push_back(c);
  EXPECT_EQ(coreSlice(ten, 0, 4), (Cores{0, 1, 2}));
  EXPECT_EQ(coreSlice(ten, 1, 4), (Cores{3, 4, 5}));
  EXPECT_EQ(coreSlice(ten, 2, 4), (Cores{6, 7}));
  EXPECT_EQ(coreSlice(ten, 3, 4), (Cores{8, 9}));
}

TEST(CoreBinding, SlicesFollowTheAllowedCoresNotTheirNumbers) {
  // A run started under `taskset -c 2,3,6,7` splits those four.
  EXPECT_EQ(coreSlice({2, 3, 6, 7}, 0, 2), (Cores{2, 3}));
  EXPECT_EQ(coreSlice({2, 3, 6, 7}, 1, 2), (Cores{6, 7}));
}

TEST(CoreBinding, MoreRanksThanCoresShareThemRoundRobin) {
  EXPECT_EQ(coreSlice({0, 1}, 0, 4), Cores{0});
  EXPECT_EQ(coreSlice({0, 1}, 1, 4), Cores{1});
  EXPECT_EQ(coreSlice({0, 1}, 2, 4), Cores{0});
  EXPECT_EQ(coreSlice({5}, 3, 4), Cores{5});
  EXPECT_EQ(coreSlice({}, 0, 2), Cores{});
}

// sched_setaffinity pins one thread; binding a process must reach the threads it already has (a
// rank's recorder thread runs before it binds) and be inherited by those it starts later.
TEST(CoreBinding, EveryThreadOfTheProcessIsPinnedAndLaterThreadsInheritIt) {
  const auto before = allowedCores();
  if (before.size() < 2) GTEST_SKIP() << "one core allowed: pinned and unpinned masks are the same";
  std::mutex m;
  std::condition_variable cv;
  pid_t parkedTid = 0;
  bool release = false;
  std::thread parked([&] {
    std::unique_lock<std::mutex> lock(m);
    parkedTid = static_cast<pid_t>(::syscall(SYS_gettid));
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return parkedTid != 0; });
  }
  const Cores target = {before.back()};
  EXPECT_EQ(bindProcessToCores(target), target);
  EXPECT_EQ(allowedCores(parkedTid), target) << "a thread already running when the process was bound";
  Cores later;
  std::thread([&] { later = allowedCores(); }).join();
  EXPECT_EQ(later, target) << "a thread started after";
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  parked.join();
  bindProcessToCores(before);  // the rest of the suite runs on every core again
  EXPECT_EQ(allowedCores(), before);
}

TEST(CoreBinding, NoSliceIsAnErrorThatSaysWhatToDo) {
  try {
    bindProcessToCores({});
    FAIL() << "binding to no cores must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--bind-cores off"), std::string::npos) << e.what();
  }
}

TEST(CoreBinding, DescribedAsTasksetTakesThem) {
  EXPECT_EQ(describeCores({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(describeCores({0, 2, 4, 5}), "0,2,4-5");
  EXPECT_EQ(describeCores({7}), "7");
  EXPECT_EQ(describeCores({}), "");
}

// The slice is cut by the ranks on this host: torchrun's LOCAL_RANK and LOCAL_WORLD_SIZE, read as
// a pair; without LOCAL_RANK every rank counts as local (shardscope's own launcher sets both).
class RendezvousEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
    ::setenv("RANK", "3", 1);
    ::setenv("WORLD_SIZE", "8", 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", "29500", 1);
  }
  void TearDown() override {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  static constexpr const char* kNames[] = {"RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                           "MASTER_ADDR", "MASTER_PORT"};
  std::map<std::string, std::string> saved_;
};

TEST_F(RendezvousEnvironment, LocalRanksComeFromTorchrunsPair) {
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("LOCAL_WORLD_SIZE", "4", 1);
  const auto info = rendezvousFromEnvironment();
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localWorldSize, 4);
}

TEST_F(RendezvousEnvironment, WithoutLocalRankEveryRankIsLocal) {
  ::setenv("LOCAL_WORLD_SIZE", "2", 1);  // alone, as some launchers set it: not used
  const auto info = rendezvousFromEnvironment();
  EXPECT_EQ(info.localRank, 3);
  EXPECT_EQ(info.localWorldSize, 8);
}

TEST_F(RendezvousEnvironment, LocalRankMustBeBelowLocalWorldSize) {
  ::setenv("LOCAL_RANK", "4", 1);
  ::setenv("LOCAL_WORLD_SIZE", "4", 1);
  try {
    rendezvousFromEnvironment();
    FAIL() << "LOCAL_RANK=4 of LOCAL_WORLD_SIZE=4 must be refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_RANK=4 must be below LOCAL_WORLD_SIZE=4"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shardscope::engine
