// A run the host cannot hold is refused before any rank starts, with the prediction, what is free,
// and the way round; one that fits, a GPU run, or --memory-check off goes ahead.
#include <gtest/gtest.h>

#include "estimate/memory_preflight.h"
#include "estimate/run_prediction.h"

namespace shardscope::estimate {
namespace {

// The example: 12 GiB of model states per rank by the estimator's own figure.
config::RunConfig bigGpt() {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.hidden = 4096;
  c.layers = 4;
  c.heads = 32;
  c.world = 2;
  c.strategy = config::StrategyKind::Ddp;
  return c;
}

TEST(MemoryPreflight, ARunLargerThanTheFreeMemoryIsRefusedWithBothFigures) {
  const config::RunConfig c = bigGpt();
  const int64_t perRank = predictRun(c).modelStateBytes() + predictRun(c).activationSavedBytes;
  ASSERT_GT(perRank, int64_t{12} << 30);
  const auto why = memoryShortfall(c, {int64_t{8} << 30, "MemAvailable in /proc/meminfo"});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("per rank by shardscope's estimate"), std::string::npos) << *why;
  EXPECT_NE(why->find("for 2 ranks on this host, and 8.00 GiB is free (MemAvailable in /proc/meminfo)"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("--memory-check off"), std::string::npos) << *why;
}

TEST(MemoryPreflight, TheRanksTogetherAreWhatMustFit) {
  config::RunConfig c = bigGpt();
  const int64_t perRank = predictRun(c).modelStateBytes() + predictRun(c).activationSavedBytes;
  EXPECT_FALSE(memoryShortfall(c, {2 * perRank, "test"})) << "two ranks fit in twice one";
  EXPECT_TRUE(memoryShortfall(c, {2 * perRank - 1, "test"}));
  c.world = 4;
  c.batch = 16;
  EXPECT_TRUE(memoryShortfall(c, {2 * perRank, "test"})) << "four ranks of DDP hold twice as much";
}

TEST(MemoryPreflight, OffAGpuOrAnUnknownHostRefusesNothing) {
  config::RunConfig c = bigGpt();
  const HostMemory small{int64_t{1} << 30, "test"};
  c.memoryCheck = config::MemoryCheck::Off;
  EXPECT_FALSE(memoryShortfall(c, small));
  c.memoryCheck = config::MemoryCheck::On;
  c.device = config::DeviceKind::Cuda;
  EXPECT_FALSE(memoryShortfall(c, small)) << "a GPU rank's model states live on its device";
  c.device = config::DeviceKind::Cpu;
  EXPECT_FALSE(memoryShortfall(c, {-1, ""}));
  EXPECT_TRUE(memoryShortfall(c, small));
}

TEST(MemoryPreflight, ThisHostsFreeMemoryIsRead) {
  const HostMemory host = hostMemoryAvailable();
  EXPECT_GT(host.availableBytes, 0);
  EXPECT_FALSE(host.source.empty());
}

}  // namespace
}  // namespace shardscope::estimate
