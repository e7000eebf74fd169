// A caller that holds the run's recording itself (the app's session) gets every event there, in
// batches under its own lock, and the run keeps no second copy; the outputs come from that copy.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "engine/run_controller.h"
#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

TEST(RecordingSink, TheCallersRecordingIsTheRunsOnlyCopy) {
  RunConfig config = testing::tinyGptConfig();
  config.strategy = StrategyKind::FullShard;
  config.steps = 2;
  const auto dir = testing::freshTempDir("recording_sink");
  config.summaryPath = dir + "/summary.json";

  std::mutex mutex;  // as the app's store: a window on another thread would read under it
  trace::RunRecording held;
  int batches = 0;
  RecordingSink sink;
  sink.withRecording = [&](const std::function<void(trace::RunRecording&)>& use) {
    std::lock_guard<std::mutex> lock(mutex);
    ++batches;
    use(held);
  };
  const RunResult result = runTraining(config, SHARDSCOPE_BINARY, {}, sink);
  ASSERT_TRUE(result.ok) << result.error;

  EXPECT_EQ(result.recording.ranks(), 0) << "no second copy in the result";
  ASSERT_EQ(held.ranks(), config.world);
  EXPECT_GT(batches, 2) << "reset, at least one batch of events, and the outputs at the end";
  for (int r = 0; r < config.world; ++r) {
    EXPECT_EQ(held.rank(r).steps.size(), 2u) << "rank " << r;
    EXPECT_GT(held.rank(r).peakTotal, 0) << "rank " << r;
  }
  // The summary was computed from the caller's copy.
  const auto summary = nlohmann::json::parse(std::ifstream(config.summaryPath));
  EXPECT_EQ(summary["ranks"][0]["peak_bytes"]["total"].get<int64_t>(), held.rank(0).peakTotal);
}

}  // namespace
}  // namespace shardscope
