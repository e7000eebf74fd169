// A caller that holds the run's recording itself (the app's session) gets every event there, in
// batches under its own lock, and the run keeps no second copy; the outputs come from that copy.
// A headless run (no caller's recording) keeps only its last steps and streams the rest to disk.
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "engine/launch/run_controller.h"
#include "engine/recording/streamed_outputs.h"
#include "stats/run_stats.h"
#include "tests/support/run_cli.h"
#include "trace/trace_reader.h"

namespace shardscope::engine {
namespace {

TEST(RecordingSink, TheCallersRecordingIsTheRunsOnlyCopy) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
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

// A window's recording with a budget keeps its newer steps within it and folds the older ones,
// whose figures still count and whose detail the run's --trace still gets.
TEST(RecordingSink, ACallersBudgetFoldsOlderStepsAndTheTraceKeepsThemAll) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
  config.steps = 24;
  const auto dir = testing::freshTempDir("recording_sink_budget");
  config.summaryPath = dir + "/summary.json";
  config.tracePath = dir + "/trace.json";
  trace::RunRecording held;
  RecordingSink sink;
  sink.withRecording = [&](const std::function<void(trace::RunRecording&)>& use) { use(held); };
  sink.maxDetailEventsPerRank = 2000;
  const RunResult result = runTraining(config, SHARDSCOPE_BINARY, {}, sink);
  ASSERT_TRUE(result.ok) << result.error;

  const auto loaded = trace::loadChromeTrace(config.tracePath);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto summary = nlohmann::json::parse(std::ifstream(config.summaryPath));
  for (int r = 0; r < config.world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const size_t perStep = loaded.recording.detailEvents(r) / static_cast<size_t>(config.steps);
    ASSERT_LT(2000 + perStep, loaded.recording.detailEvents(r)) << "the run is larger than the budget";
    EXPECT_GT(held.rank(r).folded.steps, 0);
    EXPECT_LE(held.detailEvents(r), 2000 + perStep);
    EXPECT_EQ(loaded.recording.rank(r).steps.size(), static_cast<size_t>(config.steps));
    EXPECT_EQ(summary["ranks"][r]["step_time_s"].size(), static_cast<size_t>(config.steps));
    EXPECT_EQ(
        summary["ranks"][r]["collectives"]["all_gather"]["count"].get<int64_t>(),
        loaded.recording.collectiveTotals(r, config.steps)[static_cast<int>(trace::CollectiveOp::AllGather)].count);
  }
}

// The trace and CSV streamed in pieces hold every step, and the summary's figures (from the
// recording's running totals of the steps it dropped) are those of the whole trace read back.
TEST(RecordingSink, AHeadlessRunKeepsItsLastStepsAndStreamsTheRestToItsFiles) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
  config.steps = 3 * kStreamedDetailSteps + 1;
  const auto dir = testing::freshTempDir("streamed_outputs");
  config.summaryPath = dir + "/summary.json";
  config.tracePath = dir + "/trace.json";
  config.memoryCsvPath = dir + "/memory.csv";
  const RunResult result = runTraining(config, SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(result.ok) << result.error;
  ASSERT_TRUE(result.outputErrors.empty()) << result.outputErrors.front();

  const auto loaded = trace::loadChromeTrace(config.tracePath);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto fromTrace = stats::computeRankStats(config, loaded.recording, result.parameterCount);
  const auto summary = nlohmann::json::parse(std::ifstream(config.summaryPath));
  for (int r = 0; r < config.world; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& kept = result.recording.rank(r);
    EXPECT_LT(kept.steps.size(), 2u * kStreamedDetailSteps) << "the controller dropped older steps";
    EXPECT_GT(kept.folded.steps, 0);
    EXPECT_EQ(loaded.recording.rank(r).steps.size(), static_cast<size_t>(config.steps)) << "the trace has them all";

    const auto& ranked = summary["ranks"][r];
    EXPECT_EQ(ranked["step_time_s"].size(), static_cast<size_t>(config.steps));
    EXPECT_EQ(ranked["peak_bytes"]["total"].get<int64_t>(), fromTrace[r].peakTotal);
    EXPECT_EQ(ranked["activation_saved_bytes"].get<int64_t>(), fromTrace[r].activationSavedBytes);
    EXPECT_EQ(ranked["exposed_comm_s"].size(), static_cast<size_t>(config.steps));
    for (int op = 0; op < trace::kCollectiveOpCount; ++op) {
      const auto& c = ranked["collectives"][trace::collectiveOpName(static_cast<trace::CollectiveOp>(op))];
      EXPECT_EQ(c["count"].get<int64_t>(), fromTrace[r].collectives[op].count) << op;
      EXPECT_EQ(c["sent_bytes"].get<int64_t>(), fromTrace[r].collectives[op].sentBytes) << op;
    }
    EXPECT_NEAR(ranked["overlap_pct"].get<double>(), fromTrace[r].overlapPercent, 0.5);
  }

  // One CSV row per memory counter of the trace, each rank's rows in time order.
  size_t counters = 0;
  const auto traceJson = nlohmann::json::parse(std::ifstream(config.tracePath));
  for (const auto& e : traceJson["traceEvents"]) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "memory") ++counters;
  }
  std::ifstream csv(config.memoryCsvPath);
  std::string line;
  std::getline(csv, line);
  std::vector<int64_t> lastTime(static_cast<size_t>(config.world), INT64_MIN);
  size_t rows = 0;
  while (std::getline(csv, line)) {
    const size_t comma = line.find(',');
    const int rank = std::stoi(line.substr(0, comma));
    const int64_t t = std::stoll(line.substr(comma + 1));
    EXPECT_GE(t, lastTime[static_cast<size_t>(rank)]) << "row " << rows;
    lastTime[static_cast<size_t>(rank)] = t;
    ++rows;
  }
  EXPECT_EQ(rows, counters);
  EXPECT_GT(rows, 0u);
}

}  // namespace
}  // namespace shardscope::engine
