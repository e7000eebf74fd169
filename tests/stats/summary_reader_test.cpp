// Saved runs read back as what was measured: a run made with --recording off has step times but no
// memory or traffic, and must not come back as a run that measured zeros. Traces and summaries
// read the same gzip-compressed (as they come back from the GPU machine) as plain.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_cli.h"
#include "stats/run_stats.h"
#include "stats/summary_reader.h"
#include "trace/trace_reader.h"

namespace shardscope::stats {
namespace {

std::string writeFile(const std::string& name, const std::string& text) {
  const std::string path = testing::freshTempDir("summary_reader") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SummaryReader, UnrecordedRunReadsBackAsNotRecorded) {
  // schema /3: null where nothing was measured, and the recorded step count.
  const auto path = writeFile("off.json", R"({
    "schema": "shardscope.summary/3", "status": "ok",
    "config": {"strategy": "full_shard", "world": 1, "steps": 2, "recording": "off"},
    "steps": [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.9}],
    "ranks": [{"rank": 0, "step_time_s": [0.2, 0.1], "steady_step_time_s": 0.1, "recorded_steps": 0,
               "peak_bytes": null, "at_peak_bytes": null, "after_step_bytes": null,
               "throughput": {"samples_per_s": 40.0}, "collectives": null, "overlap_pct": null,
               "dropped_events": 0}]})");
  auto loaded = loadSummary(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.runs.size(), 1u);
  const auto& rank = loaded.runs[0].ranks.at(0);
  EXPECT_FALSE(rank.recorded);
  EXPECT_EQ(rank.recordedSteps, 0);
  EXPECT_FALSE(anyRecorded(loaded.runs[0].ranks));
  EXPECT_DOUBLE_EQ(rank.steadyStepSeconds, 0.1);
  EXPECT_DOUBLE_EQ(rank.samplesPerSecond, 40.0);
}

// A PyTorch job's summary names what recorded it and its session; its config only its world, so
// it does not come back as shardscope's default strategy.
TEST(SummaryReader, APyTorchJobsSummaryKeepsItsSourceAndTitle) {
  const auto path = writeFile("job.json", R"json({
    "schema": "shardscope.summary/3", "status": "ok", "source": "torch.profiler",
    "title": "a PyTorch job (torch.profiler), sharded, gathered again for backward (FULL_SHARD-like)",
    "config": {"world": 2}, "steps": [],
    "ranks": [{"rank": 0, "step_time_s": [0.02], "steady_step_time_s": 0.02, "recorded_steps": 1,
               "peak_bytes": {"param_shard": 10}, "throughput": {"samples_per_s": null}, "dropped_events": 0}]})json");
  auto loaded = loadSummary(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.runs.size(), 1u);
  EXPECT_EQ(loaded.runs[0].source, "torch.profiler");
  EXPECT_EQ(loaded.runs[0].title,
            "a PyTorch job (torch.profiler), sharded, gathered again for backward (FULL_SHARD-like)");
  EXPECT_EQ(loaded.runs[0].config.world, 2);
}

// A PyTorch job traced without memory events (profile_memory=False): its collectives were
// recorded, its memory was not, and it reads back so (the tables say "not recorded", not 0 B).
TEST(SummaryReader, AJobWithoutMemoryEventsReadsBackWithItsCollectivesOnly) {
  const auto path = writeFile("nomem.json", R"json({
    "schema": "shardscope.summary/4", "status": "ok", "source": "torch.profiler", "config": {"world": 2},
    "steps": [],
    "ranks": [{"rank": 0, "step_time_s": [0.2], "steady_step_time_s": 0.2, "recorded_steps": 1,
               "peak_bytes": null, "at_peak_bytes": null, "after_step_bytes": null,
               "collectives": {"all_reduce": {"count": 5, "size_bytes": 100, "sent_bytes": 100, "received_bytes": 100,
                                              "time_s": 0.01}},
               "throughput": {"samples_per_s": null}, "dropped_events": 0}]})json");
  auto loaded = loadSummary(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& rank = loaded.runs.at(0).ranks.at(0);
  EXPECT_TRUE(rank.recorded);
  EXPECT_FALSE(rank.memoryRecorded);
  EXPECT_FALSE(anyMemoryRecorded(loaded.runs[0].ranks));
  EXPECT_TRUE(anyRecorded(loaded.runs[0].ranks));
}

// Of two ranks, one recorded its memory and a collective, the other nothing at all (a PyTorch job's
// rank without a trace): that one measured nothing, and its figures are not zeros.
TEST(RankStatsOf, ARankThatRecordedNothingIsNotRecorded) {
  trace::RunRecording rec;
  rec.reset(2);
  trace::Event memory;
  memory.kind = trace::EventKind::Memory;
  memory.rank = 0;
  memory.beginNs = 10;
  memory.bytes = 4096;
  rec.add(memory);
  config::RunConfig config;
  config.world = 2;
  const auto stats = computeRankStats(config, rec, 0, DeviceFacts{});
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_TRUE(stats[0].recorded);
  EXPECT_TRUE(stats[0].memoryRecorded);
  EXPECT_FALSE(stats[1].recorded);
  EXPECT_FALSE(stats[1].memoryRecorded);
}

TEST(SummaryReader, OlderSummariesTakeRecordedStepsFromTheirConfig) {
  // schema /2 wrote zeros and no recorded_steps; its config still says how the run recorded.
  const char* ranks = R"("ranks": [{"rank": 0, "step_time_s": [0.2, 0.1, 0.1],
      "peak_bytes": {"total": 0}, "collectives": {"all_gather": {"count": 0, "bytes": 0}}}]})";
  for (const auto& [mode, recorded, steps] :
       {std::tuple{"on", true, 3}, std::tuple{"alternate", true, 2}, std::tuple{"off", false, 0}}) {
    const auto path = writeFile(
        std::string("v2_") + mode + ".json",
        std::string(R"({"schema": "shardscope.summary/2", "config": {"recording": ")") + mode + "\"}, " + ranks);
    auto loaded = loadSummary(path);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    EXPECT_EQ(loaded.runs.at(0).ranks.at(0).recorded, recorded) << mode;
    EXPECT_EQ(loaded.runs.at(0).ranks.at(0).recordedSteps, steps) << mode;
  }
}

TEST(SummaryReader, TrafficIsReadOrFollowsFromTheSizesOfOlderSummaries) {
  // summary/3 wrote only the sizes ("bytes"): what a rank sent follows from the ring among the world.
  const auto old = writeFile("v3.json", R"({"schema": "shardscope.summary/3", "config": {"world": 4},
      "ranks": [{"rank": 0, "step_time_s": [0.1], "peak_bytes": {"total": 0}, "collectives": {
        "all_reduce": {"count": 2, "bytes": 1000}, "all_gather": {"count": 1, "bytes": 800}}}]})");
  auto loaded = loadSummary(old);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& ar = loaded.runs.at(0).ranks.at(0).collectives[static_cast<int>(trace::CollectiveOp::AllReduce)];
  const auto& ag = loaded.runs.at(0).ranks.at(0).collectives[static_cast<int>(trace::CollectiveOp::AllGather)];
  EXPECT_EQ(ar.sizeBytes, 1000);
  EXPECT_EQ(ar.sentBytes, 1500);
  EXPECT_EQ(ag.receivedBytes, 600);
  // summary/4 writes them; they are taken as written.
  const auto fresh = writeFile("v4.json", R"({"schema": "shardscope.summary/4", "config": {"world": 4},
      "ranks": [{"rank": 0, "step_time_s": [0.1], "peak_bytes": {"total": 0}, "collectives": {
        "all_reduce": {"count": 2, "bytes": 1000, "size_bytes": 1000, "sent_bytes": 1499, "received_bytes": 1498}}}]})");
  loaded = loadSummary(fresh);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& written = loaded.runs.at(0).ranks.at(0).collectives[static_cast<int>(trace::CollectiveOp::AllReduce)];
  EXPECT_EQ(written.sentBytes, 1499);
  EXPECT_EQ(written.receivedBytes, 1498);
}

TEST(SavedRuns, GzippedTraceAndSummaryReadLikeThePlainOnes) {
  const auto dir = testing::freshTempDir("saved_runs_gzip");
  auto args = testing::optionsOf(testing::tinyGptConfig());
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--trace", dir + "/trace.json", "--summary", dir + "/summary.json"});
  auto run = testing::runShardscope(args);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  for (const char* file : {"/trace.json", "/summary.json"}) {
    auto zip = testing::runCommand({"gzip", "-k", dir + file});
    ASSERT_EQ(zip.exitCode, 0) << zip.output;
  }

  EXPECT_TRUE(trace::looksLikeChromeTrace(dir + "/trace.json.gz"));
  EXPECT_FALSE(trace::looksLikeChromeTrace(dir + "/summary.json.gz"));
  const auto plain = trace::loadChromeTrace(dir + "/trace.json");
  const auto zipped = trace::loadChromeTrace(dir + "/trace.json.gz");
  ASSERT_TRUE(zipped.error.empty()) << zipped.error;
  ASSERT_EQ(zipped.recording.ranks(), 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(zipped.recording.rank(r).memory.size(), plain.recording.rank(r).memory.size());
    EXPECT_EQ(zipped.recording.rank(r).collectives.size(), plain.recording.rank(r).collectives.size());
    EXPECT_EQ(zipped.recording.rank(r).peakTotal, plain.recording.rank(r).peakTotal);
    EXPECT_GT(zipped.recording.rank(r).peakTotal, 0);
  }
  const auto summary = loadSummary(dir + "/summary.json.gz");
  ASSERT_TRUE(summary.error.empty()) << summary.error;
  ASSERT_EQ(summary.runs.size(), 1u);
  EXPECT_EQ(summary.runs[0].ranks.size(), 2u);
  EXPECT_EQ(summary.runs[0].losses.size(), 2u);

  // A damaged file is an error that names it, not a crash.
  std::ofstream(dir + "/broken.json.gz", std::ios::binary) << "\x1f\x8b not really gzip";
  const auto broken = trace::loadChromeTrace(dir + "/broken.json.gz");
  EXPECT_NE(broken.error.find("broken.json.gz"), std::string::npos) << broken.error;
}

}  // namespace
}  // namespace shardscope::stats
