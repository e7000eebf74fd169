// compare --schedules: the same model, data and micro-batches under each pipeline schedule, run for
// real, with each schedule's bubble three ways and the activations it held.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::app {
namespace {

int maxOverRanks(const nlohmann::json& run, const char* field) {
  int most = 0;
  for (const auto& rank : run["ranks"]) most = std::max(most, rank["pipeline"][field].get<int>());
  return most;
}

TEST(CompareSchedules, GPipeHoldsEveryMicroBatchWhere1F1BHoldsAtMostP) {
  const auto dir = testing::freshTempDir("compare_schedules");
  const auto r = testing::runShardscope(
      {"compare", "--world", "2",        "--pp",    "2",        "--schedules", "gpipe,1f1b,interleaved_1f1b",
       "--model", "gpt",     "--layers", "4",       "--hidden", "32",          "--seq",
       "8",       "--batch", "8",        "--steps", "2",        "--summary",   dir + "/compare.json"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char* row : {"bubble/step (worst rank)", "planned, of the plan", "closed form (PREDICTION)",
                          "micro-batches held (max)", "sent to stages/step (max)"}) {
    EXPECT_NE(r.output.find(row), std::string::npos) << row << "\n" << r.output;
  }
  EXPECT_EQ(r.output.find("ratio to ddp"), std::string::npos) << "one strategy: no ratio between schedules";
  const auto runs = nlohmann::json::parse(std::ifstream(dir + "/compare.json"))["runs"];
  ASSERT_TRUE(runs.contains("gpipe") && runs.contains("1f1b") && runs.contains("interleaved_1f1b")) << runs.dump();
  // One M for all, the largest default (interleaved's 2P), so the bubbles compare.
  for (const char* name : {"gpipe", "1f1b", "interleaved_1f1b"}) {
    EXPECT_EQ(runs[name]["pipeline"]["microbatches"], 4) << name;
    for (const auto& rank : runs[name]["ranks"]) {
      EXPECT_GT(rank["pipeline"]["bubble_share"].get<double>(), 0) << name;
      EXPECT_GT(rank["pipeline"]["planned_bubble_share"].get<double>(), 0) << name;
    }
  }
  EXPECT_EQ(maxOverRanks(runs["gpipe"], "microbatches_in_flight_peak"), 4);
  EXPECT_EQ(maxOverRanks(runs["1f1b"], "microbatches_in_flight_peak"), 2);
  // Interleaving halves the planned bubble's share at V = 2 (1/5 against 1/9 of the plan: (P-1)/(M+P-1)
  // and (P-1)/(VM+P-1) with F and B the same on every stage).
  const double gpipePlanned = runs["gpipe"]["ranks"][0]["pipeline"]["planned_bubble_share"];
  const double interleavedPlanned = runs["interleaved_1f1b"]["ranks"][0]["pipeline"]["planned_bubble_share"];
  EXPECT_LT(interleavedPlanned, gpipePlanned);
}

TEST(CompareSchedules, BadListsAreNamed) {
  const auto noPipeline = testing::runShardscope({"compare", "--schedules", "gpipe,1f1b"});
  EXPECT_EQ(noPipeline.exitCode, 2) << noPipeline.output;
  EXPECT_NE(noPipeline.output.find("add --pp P"), std::string::npos) << noPipeline.output;
  const auto unknown = testing::runShardscope({"compare", "--world", "2", "--pp", "2", "--schedules", "gpipe,zb"});
  EXPECT_EQ(unknown.exitCode, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("'zb' is not a schedule"), std::string::npos) << unknown.output;
  EXPECT_NE(unknown.output.find("zero_bubble"), std::string::npos) << "the choices: " << unknown.output;
  const auto empty = testing::runShardscope({"compare", "--world", "2", "--pp", "2", "--schedules", "gpipe,"});
  EXPECT_NE(empty.output.find("has an empty entry"), std::string::npos) << empty.output;
}

}  // namespace
}  // namespace shardscope::app
