// A GPU rank's own memory and measured peak stand in for --gpu-memory and --peak-tflops when the
// user states neither; a stated figure always wins; a CPU rank reports nothing, so nothing is drawn.
#include <gtest/gtest.h>

#include "stats/device_limits.h"
#include "stats/run_stats.h"

namespace shardscope::stats {
namespace {

trace::Event runInfo(int64_t memoryBytes, int64_t peakFlops) {
  trace::Event e;
  e.kind = trace::EventKind::RunInfo;
  e.deviceMemoryBytes = memoryBytes;
  e.peakFlopsPerSecond = peakFlops;
  return e;
}

TEST(DeviceLimits, TheDevicesOwnFiguresOnlyWhereNoneIsStated) {
  const auto h200 = deviceFactsOf(runInfo(150'000'000'000, 700'000'000'000'000));
  EXPECT_EQ(h200.memoryBytes, 150'000'000'000);
  EXPECT_DOUBLE_EQ(h200.peakFlops, 7e14);
  config::RunConfig config;
  config.precision = config::Precision::Bf16;
  auto limits = deviceLimitsOf(config, h200);
  EXPECT_DOUBLE_EQ(limits.capacityBytes, 150e9);
  EXPECT_DOUBLE_EQ(limits.peakFlops, 7e14);
  EXPECT_NE(limits.capacityNote.find("the device's own 150 GB"), std::string::npos) << limits.capacityNote;
  EXPECT_NE(limits.peakNote.find("measured"), std::string::npos) << limits.peakNote;
  EXPECT_NE(limits.peakNote.find("700 TFLOP/s (bf16 matmul)"), std::string::npos) << limits.peakNote;
  config.gpuMemoryGB = 80;
  config.peakTflops = 989;
  limits = deviceLimitsOf(config, h200);
  EXPECT_DOUBLE_EQ(limits.capacityBytes, 80e9);
  EXPECT_DOUBLE_EQ(limits.peakFlops, 989e12);
  EXPECT_EQ(limits.peakNote, "the stated peak, --peak-tflops 989");
  // A CPU rank (or another event kind, or nonsense) reports nothing: no line, no MFU.
  limits = deviceLimitsOf(config::RunConfig{}, deviceFactsOf(runInfo(0, 0)));
  EXPECT_EQ(limits.capacityBytes, 0);
  EXPECT_EQ(limits.peakFlops, 0);
  EXPECT_TRUE(limits.peakNote.empty());
  EXPECT_EQ(deviceFactsOf(runInfo(-5, -1)).memoryBytes, 0);
  trace::Event memory = runInfo(1000, 1000);
  memory.kind = trace::EventKind::Memory;
  EXPECT_EQ(deviceFactsOf(memory).peakFlops, 0);
}

// MFU over the measured peak: two 10 ms steps of an mlp, 6 x P x samples FLOPs each.
TEST(DeviceLimits, MfuUsesTheMeasuredPeakWithoutAStatedOne) {
  config::RunConfig config;
  config.model = config::ModelKind::Mlp;
  config.batch = 8;
  config.world = 1;
  trace::RunRecording recording(1);
  for (int step = 0; step < 2; ++step) {
    trace::Event e;
    e.kind = trace::EventKind::StepEnd;
    e.step = step;
    e.beginNs = step * 10'000'000;
    e.endNs = e.beginNs + 10'000'000;
    recording.add(e);
  }
  const int64_t parameters = 1000;
  const auto noPeak = computeRankStats(config, recording, parameters);
  ASSERT_EQ(noPeak.size(), 1u);
  EXPECT_EQ(noPeak[0].mfu, 0);
  const DeviceFacts gpu{80'000'000'000, 1e9};
  const auto measured = computeRankStats(config, recording, parameters, gpu);
  EXPECT_NEAR(measured[0].modelFlopsPerSecond, 6.0 * 1000 * 8 / 0.01, 1e-6);
  EXPECT_NEAR(measured[0].mfu, measured[0].modelFlopsPerSecond / 1e9, 1e-12);
  config.peakTflops = 1e-3;  // a stated 1 GFLOP/s wins over the device's 5 GFLOP/s
  EXPECT_NEAR(computeRankStats(config, recording, parameters, DeviceFacts{0, 5e9})[0].mfu, measured[0].mfu, 1e-12);
}

}  // namespace
}  // namespace shardscope::stats
