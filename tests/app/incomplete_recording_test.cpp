// A run whose ranks dropped events ends "incomplete" (exit 3), and so does its trace read back:
// `view TRACE --summary` says what the recording lost, per rank, and how many of the steps the run
// trained the trace lost, in both trace formats. SHARDSCOPE_EVENT_BUFFER (engine/launch/rank_worker.cpp)
// shrinks each rank's buffer to 2 events, so the ranks drop events whatever the machine's load.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

nlohmann::json jsonOf(const std::string& path) { return nlohmann::json::parse(testing::fileContents(path)); }

std::vector<int64_t> droppedByRank(const nlohmann::json& summary) {
  std::vector<int64_t> dropped;
  for (const auto& rank : summary["ranks"]) dropped.push_back(rank["dropped_events"].get<int64_t>());
  return dropped;
}

class IncompleteRecording : public ::testing::TestWithParam<const char*> {};

TEST_P(IncompleteRecording, ATraceWithDropsReopensIncompleteWithExitStatus3) {
  const std::string dir = testing::freshTempDir("incomplete_recording");
  const std::string trace = dir + "/t." + GetParam();
  auto config = testing::tinyGptConfig();
  config.steps = 4;
  const auto run = testing::runShardscope(
      testing::runArgsOf(config, {"--trace", trace, "--summary", dir + "/run.json"}), {"SHARDSCOPE_EVENT_BUFFER=2"});
  ASSERT_EQ(run.exitCode, 3) << run.output;
  const auto ran = jsonOf(dir + "/run.json");
  ASSERT_EQ(ran["status"], "incomplete") << run.output;
  EXPECT_EQ(ran["steps_trained"], 4);
  EXPECT_EQ(ran["steps_lost"], 0) << "the run's own losses are every step's";

  const auto view = testing::runShardscope({"view", trace, "--summary", dir + "/view.json"});
  EXPECT_EQ(view.exitCode, 3) << "docs/cli.md: exit 3 for a record whose recording is incomplete\n" << view.output;
  EXPECT_NE(view.output.find("recording incomplete: the run trained 4 steps"), std::string::npos) << view.output;
  const auto viewed = jsonOf(dir + "/view.json");
  EXPECT_EQ(viewed["status"], "incomplete");
  EXPECT_EQ(droppedByRank(viewed), droppedByRank(ran)) << "each rank's drops, as the run counted them";
  EXPECT_EQ(viewed["steps_trained"], 4);
  // The trace holds the steps whose step spans were not dropped; the rest are counted as lost.
  EXPECT_EQ(viewed["steps_lost"].get<int64_t>(), 4 - static_cast<int64_t>(viewed["steps"].size())) << viewed.dump();
  // A buffer of 2 events drops step spans too: some step is lost, and counted (not missing in silence).
  EXPECT_GT(viewed["steps_lost"].get<int64_t>(), 0) << viewed.dump();
}

INSTANTIATE_TEST_SUITE_P(BothFormats, IncompleteRecording, ::testing::Values("json", "pftrace"));

// A Chrome trace from before the run's end was kept (no status, steps trained or drops in its
// shardscope_run) opens as it did: "ok", exit 0, nothing said to be lost.
TEST(IncompleteRecordingOld, ATraceWithoutTheRunsEndOpensAsBefore) {
  const std::string dir = testing::freshTempDir("incomplete_recording_old");
  const auto run = testing::runShardscope(testing::runArgsOf(testing::tinyGptConfig(), {"--trace", dir + "/t.json"}),
                                          {"SHARDSCOPE_EVENT_BUFFER=2"});
  ASSERT_EQ(run.exitCode, 3) << run.output;
  auto trace = jsonOf(dir + "/t.json");
  for (const char* key : {"status", "error", "steps_trained", "dropped_events"}) trace["shardscope_run"].erase(key);
  std::ofstream(dir + "/old.json") << trace.dump();
  const auto view = testing::runShardscope({"view", dir + "/old.json", "--summary", dir + "/view.json"});
  ASSERT_EQ(view.exitCode, 0) << view.output;
  EXPECT_EQ(view.output.find("recording incomplete"), std::string::npos) << view.output;
  const auto viewed = jsonOf(dir + "/view.json");
  EXPECT_EQ(viewed["status"], "ok");
  EXPECT_TRUE(viewed["steps_trained"].is_null());
  EXPECT_TRUE(viewed["steps_lost"].is_null());
  for (auto dropped : droppedByRank(viewed)) EXPECT_EQ(dropped, 0);
}

}  // namespace
}  // namespace shardscope
