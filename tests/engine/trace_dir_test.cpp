// A job launched by someone else (torchrun's variables, set here by hand) records each rank into
// its own file with `worker --trace-dir`; `view DIR` merges them into the same recording a
// shardscope run of the same job gives, and a job that fails keeps what its ranks recorded.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "stats/first_mismatch.h"
#include "tests/support/run_cli.h"
#include "trace/rank_event_files.h"

namespace shardscope::engine {
namespace {

TEST(TraceDir, ALaunchedJobsRankFilesMergeIntoWhatARunOfItRecords) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
  config.steps = 3;
  const std::string dir = testing::freshTempDir("trace_dir_job") + "/job";  // the worker creates it
  const auto ranks = testing::runWorkerJob(config, {"--trace-dir", dir});
  for (const auto& r : ranks) ASSERT_EQ(r.exitCode, 0) << r.output;

  const std::string runDir = testing::freshTempDir("trace_dir_run");
  const auto run = testing::runShardscope(
      testing::runArgsOf(config, {"--trace", runDir + "/t.json", "--summary", runDir + "/s.json"}));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto ran = trace::loadChromeTrace(runDir + "/t.json");
  ASSERT_TRUE(ran.error.empty()) << ran.error;
  const auto summary = nlohmann::json::parse(std::ifstream(runDir + "/s.json"));

  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  EXPECT_TRUE(job.note.empty()) << job.note;
  EXPECT_FALSE(job.ranksFailed);
  EXPECT_EQ(job.config.world, 2);
  EXPECT_EQ(job.config.strategy, config::StrategyKind::FullShard) << "config.json from rank 0";
  EXPECT_EQ(job.device, "cpu / gloo");
  ASSERT_EQ(job.recording.ranks(), 2);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& steps = job.recording.rank(r).steps;
    ASSERT_EQ(steps.size(), 3u);
    for (size_t s = 0; s < steps.size(); ++s) {
      EXPECT_NEAR(steps[s].loss, summary["steps"][s]["loss"].get<double>(), 1e-6) << "the same job's loss, step " << s;
    }
    const auto a = job.recording.collectiveTotals(r, 3);
    const auto b = ran.recording.collectiveTotals(r, 3);
    for (int op = 0; op < trace::kCollectiveOpCount; ++op) {
      EXPECT_EQ(a[op].count, b[op].count) << trace::collectiveOpName(static_cast<trace::CollectiveOp>(op));
      EXPECT_EQ(a[op].sizeBytes, b[op].sizeBytes) << trace::collectiveOpName(static_cast<trace::CollectiveOp>(op));
    }
    EXPECT_GT(job.recording.rank(r).memory.size(), 100u);
    // The model states are the same allocations (the total's peak moves with timing run to run).
    for (auto role : {trace::MemoryRole::ParamShard, trace::MemoryRole::GradShard, trace::MemoryRole::OptimizerState}) {
      const int i = static_cast<int>(role);
      EXPECT_EQ(job.recording.rank(r).peakByRole[i], ran.recording.rank(r).peakByRole[i])
          << trace::memoryRoleName(role);
      EXPECT_GT(job.recording.rank(r).peakByRole[i], 0) << trace::memoryRoleName(role);
    }
    EXPECT_EQ(job.recording.rank(r).groups.size(), ran.recording.rank(r).groups.size());
  }
}

// A job whose ranks fail mid-run: one killed, one raising an error. Each file keeps what its rank
// recorded up to then, and the merge says which rank failed and how.
TEST(TraceDir, AFailedJobKeepsWhatItsRanksRecorded) {
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 5;
  const std::string dir = testing::freshTempDir("trace_dir_failed");
  const auto ranks = testing::runWorkerJob(
      config, {"--trace-dir", dir},
      {{"SHARDSCOPE_FAULT=rank=0,step=2,mode=error"}, {"SHARDSCOPE_FAULT=rank=1,step=2,mode=kill"}});
  EXPECT_EQ(ranks[0].exitCode, 1) << ranks[0].output;
  EXPECT_NE(ranks[0].output.find("injected fault at step 2"), std::string::npos) << ranks[0].output;
  EXPECT_EQ(ranks[1].exitCode, -1) << "killed: " << ranks[1].output;

  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  char host[256] = {0};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::string on = std::string(" (host ") + host + ")";  // each rank named with its host
  EXPECT_NE(job.note.find("rank 0" + on + " failed: injected fault at step 2"), std::string::npos) << job.note;
  EXPECT_TRUE(job.ranksFailed);
  EXPECT_NE(
      job.note.find("rank 1" + on + " stopped without finishing or an error after 2 steps (killed, or its host lost)"),
      std::string::npos)
      << job.note;
  ASSERT_EQ(job.recording.ranks(), 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.recording.rank(r).steps.size(), 2u) << "rank " << r << ": steps 0 and 1, before the fault";
    EXPECT_GT(job.recording.rank(r).collectives.size(), 0u);
  }
  // Each rank's last collectives as it issued them: both faults struck as step 2 began, before its
  // first collective, so the ranks agree and each saw its last (step 1's loss all-reduce) end.
  ASSERT_TRUE(job.lastCollectives);
  EXPECT_FALSE(stats::firstMismatch(*job.lastCollectives));
  EXPECT_EQ(stats::whereRanksStand(*job.lastCollectives),
            "In group world [0, 1] every rank entered all_reduce #4 last, and 2 of 2 saw it end.");
}

// One "host" whose clock runs 5 s ahead (the test-only clock shift): the rank measures its offset
// to rank 0's clock through the store, and the merge puts it back, so that a collective ends at
// the same moment on both ranks again.
TEST(TraceDir, AnotherHostsClockIsMeasuredAndItsRanksAligned) {
  constexpr int64_t kShift = 5'000'000'000;
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 6;
  const std::string dir = testing::freshTempDir("trace_dir_clock");
  // --clock-every that short: due at once after every reading, as a long job's is every minute.
  // Rank 0 names the step two ahead, so rounds run after steps 2 and 5.
  const auto ranks = testing::runWorkerJob(config, {"--trace-dir", dir, "--clock-every", "0.000001"},
                                           {{}, {"SHARDSCOPE_TEST_CLOCK_SHIFT_NS=" + std::to_string(kShift)}});
  for (const auto& r : ranks) ASSERT_EQ(r.exitCode, 0) << r.output;

  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  ASSERT_EQ(job.rankClocks.size(), 2u);
  const auto& shifted = job.rankClocks[1];
  EXPECT_FALSE(job.rankClocks[0].shifted());
  EXPECT_EQ(shifted.readings().size(), 4u) << "measured when the ranks are up, after steps 2 and 5, and at the end";
  for (const auto& reading : shifted.readings()) {
    EXPECT_GE(reading.uncertaintyNs, 0) << "measured";
    EXPECT_LT(reading.uncertaintyNs, 100'000'000) << "a loopback round trip through the store";
    EXPECT_LE(std::llabs(reading.offsetNs + kShift), reading.uncertaintyNs) << "the 5 s recovered within its bound";
  }
  EXPECT_TRUE(shifted.shifted());
  EXPECT_FALSE(shifted.host().empty());
  EXPECT_NE(job.clocks.find("rank 1 (host " + shifted.host() + ") shifted by -"), std::string::npos) << job.clocks;
  EXPECT_NE(job.clocks.find(" s onto rank 0's clock, measured to within "), std::string::npos) << job.clocks;

  // A collective ends together on every rank (the last one out releases both): each step's loss
  // all-reduce, after the shift, ends on both ranks within the bound and a scheduling delay (a
  // busy machine's; 50 ms is still a hundredth of the shift).
  const auto& c0 = job.recording.rank(0).collectives;
  const auto& c1 = job.recording.rank(1).collectives;
  ASSERT_EQ(c0.size(), c1.size());
  int compared = 0;
  for (size_t i = 0; i < c0.size(); ++i) {
    if (trace::collectiveUnit(c0[i]) != "loss (logging)") continue;
    ASSERT_EQ(trace::collectiveUnit(c1[i]), "loss (logging)") << "the ranks' collectives in one order";
    EXPECT_LT(std::llabs(c0[i].endNs - c1[i].endNs), shifted.worstUncertaintyNs() + 50'000'000) << "collective " << i;
    ++compared;
  }
  EXPECT_EQ(compared, config.steps);

  // The job's summary records each rank's clock as the merge applied it.
  const std::string summaryPath = dir + "/summary.json";
  const auto written = testing::runShardscope({"view", dir, "--summary", summaryPath});
  ASSERT_EQ(written.exitCode, 0) << written.output;
  const auto summary = nlohmann::json::parse(std::ifstream(summaryPath));
  EXPECT_EQ(summary["status"], "ok");
  EXPECT_EQ(summary["steps"].size(), static_cast<size_t>(config.steps));
  ASSERT_EQ(summary["clocks"].size(), 2u);
  const auto& clock1 = summary["clocks"][1];
  EXPECT_EQ(clock1["host"], shifted.host());
  EXPECT_TRUE(clock1["shifted"].get<bool>());
  EXPECT_EQ(clock1["readings"], 4);
  EXPECT_LE(std::abs(clock1["offset_s"].get<double>() + kShift / 1e9), clock1["uncertainty_s"].get<double>() + 1e-9);
  EXPECT_FALSE(summary["clocks"][0]["shifted"].get<bool>());
  EXPECT_EQ(summary["clocks"][0]["offset_s"], 0.0) << "rank 0 is the reference";
}

// A run's trace read back by `view --summary` gives the run's steps with their losses, in both
// formats (the losses ride on the step spans: before, every step read back with a loss of 0).
TEST(TraceDir, ARunsTraceGivesBackItsStepsAndLosses) {
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 5;
  const std::string dir = testing::freshTempDir("trace_losses");
  for (const std::string format : {"pftrace", "json"}) {
    const std::string trace = dir + "/t." + format, ran = dir + "/ran_" + format + ".json",
                      read = dir + "/read_" + format + ".json";
    const auto run = testing::runShardscope(testing::runArgsOf(config, {"--trace", trace, "--summary", ran}));
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const auto view = testing::runShardscope({"view", trace, "--summary", read});
    ASSERT_EQ(view.exitCode, 0) << view.output;
    const auto a = nlohmann::json::parse(std::ifstream(ran)), b = nlohmann::json::parse(std::ifstream(read));
    ASSERT_EQ(a["steps"].size(), static_cast<size_t>(config.steps)) << format;
    ASSERT_EQ(b["steps"].size(), a["steps"].size()) << format;
    for (size_t s = 0; s < a["steps"].size(); ++s) {
      EXPECT_GT(a["steps"][s]["loss"].get<double>(), 0) << format;
      EXPECT_EQ(b["steps"][s]["loss"], a["steps"][s]["loss"]) << format << " step " << s;
    }
  }
}

// Ranks of one host share a clock: what they measure is within its own bound, and nothing moves.
TEST(TraceDir, RanksOfOneHostAreNotShifted) {
  config::RunConfig config = testing::tinyGptConfig();
  const std::string dir = testing::freshTempDir("trace_dir_one_host");
  for (const auto& r : testing::runWorkerJob(config, {"--trace-dir", dir})) ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  for (const auto& clock : job.rankClocks) {
    EXPECT_FALSE(clock.shifted());
    EXPECT_TRUE(clock.measured());
  }
  EXPECT_TRUE(job.clocks.empty()) << job.clocks;
}

TEST(TraceDir, ADirectoryWithoutRankFilesIsNotOne) {
  const std::string dir = testing::freshTempDir("trace_dir_empty");
  EXPECT_FALSE(trace::isRankEventDirectory(dir));
  const auto loaded = trace::loadRankEventFiles(dir);
  EXPECT_NE(loaded.error.find("is a directory without rank-R.events files: name a trace or summary file in it, or "
                              "record a job into it with 'shardscope worker --trace-dir"),
            std::string::npos)
      << loaded.error;
}

}  // namespace
}  // namespace shardscope::engine
