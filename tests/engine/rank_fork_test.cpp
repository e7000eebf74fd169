// Ranks forked from the controller (engine/launch/rank_fork.h) are the ranks `shardscope worker` would
// be: the same losses and the same measured memory, and the summary says how they were started.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

nlohmann::json summaryOf(const std::string& path) {
  const std::string text = testing::fileContents(path);
  return nlohmann::json::parse(text.empty() ? "{}" : text);
}

TEST(RankStart, ForkedRanksTrainAndMeasureAsExecdRanksDo) {
  const auto dir = testing::freshTempDir("rank_fork");
  config::RunConfig c = testing::tinyGptConfig();
  c.world = 3;
  c.batch = 6;
  c.steps = 3;
  const auto forked = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/forked.json"}));
  const auto execd =
      testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/exec.json"}), {"SHARDSCOPE_EXEC_RANKS=1"});
  ASSERT_EQ(forked.exitCode, 0) << forked.output;
  ASSERT_EQ(execd.exitCode, 0) << execd.output;
  const auto a = summaryOf(dir + "/forked.json"), b = summaryOf(dir + "/exec.json");
  EXPECT_EQ(a.value("rank_processes", ""), "forked");
  EXPECT_EQ(b.value("rank_processes", ""), "exec");
  ASSERT_EQ(a["steps"].size(), 3u);
  EXPECT_EQ(a["steps"], b["steps"]) << "the losses differ";
  ASSERT_EQ(a["ranks"].size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(a["ranks"][r]["peak_bytes"], b["ranks"][r]["peak_bytes"]) << "rank " << r;
  }
}

double childrenCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// The summary's controller_cpu_s is the controller's process alone while the ranks ran: some, and
// less than the run's CPU with its ranks' (what this test's children used over the run). A trace
// reopened observed no run: null, not a zero that reads as measured.
TEST(RankStart, TheSummaryGivesTheControllersOwnCpu) {
  const auto dir = testing::freshTempDir("controller_cpu");
  config::RunConfig c = testing::tinyGptConfig();
  c.world = 2;
  c.steps = 40;
  const double before = childrenCpuSeconds();
  const auto run =
      testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/s.json", "--trace", dir + "/t.pftrace"}));
  const double runCpu = childrenCpuSeconds() - before;
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto s = summaryOf(dir + "/s.json");
  ASSERT_TRUE(s["controller_cpu_s"].is_number()) << s.dump();
  EXPECT_GT(s["controller_cpu_s"].get<double>(), 0.0);
  EXPECT_LT(s["controller_cpu_s"].get<double>(), runCpu) << "the ranks' CPU is not the controller's";
  const auto view = testing::runShardscope({"view", dir + "/t.pftrace", "--summary", dir + "/v.json"});
  ASSERT_EQ(view.exitCode, 0) << view.output;
  EXPECT_TRUE(summaryOf(dir + "/v.json")["controller_cpu_s"].is_null());
}

}  // namespace
}  // namespace shardscope::engine
