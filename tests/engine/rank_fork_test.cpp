// Ranks forked from the controller (engine/launch/rank_fork.h) are the ranks `shardscope worker` would
// be: the same losses and the same measured memory, and the summary says how they were started.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

nlohmann::json summaryOf(const std::string& path) {
  const std::string text = testing::fileContents(path);
  return nlohmann::json::parse(text.empty() ? "{}" : text);
}

TEST(RankStart, ForkedRanksTrainAndMeasureAsExecdRanksDo) {
  const auto dir = testing::freshTempDir("rank_fork");
  RunConfig c = testing::tinyGptConfig();
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

}  // namespace
}  // namespace shardscope
