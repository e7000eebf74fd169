// A rank that fails or dies ends the whole run with an error naming the rank; never a hang.
// Faults are injected with SHARDSCOPE_FAULT (see engine/rank_worker.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

std::vector<std::string> argsWithSummary(const std::string& summary) {
  return {"run", "--model", "mlp", "--strategy", "full_shard", "--world", "3", "--batch", "6",
          "--steps", "4", "--summary", summary};
}

TEST(RankFailure, KilledRankIsNamedAndPeersAreStopped) {
  const auto dir = testing::freshTempDir("rank_killed");
  auto r = testing::runShardscope(argsWithSummary(dir + "/summary.json"),
                                  {"SHARDSCOPE_FAULT=rank=1,step=2,mode=kill"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 died: killed by signal 9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("during step 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 2/4"), std::string::npos) << "steps before the fault still print";
  EXPECT_LT(r.seconds, 60.0);
  // What was recorded before the failure is kept.
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["steps"].size(), 2u);
  EXPECT_NE(summary["error"].get<std::string>().find("rank 1"), std::string::npos);
}

// A learning rate that sends the loss to nan stops the run at the first such step (every later one
// would be nan too), says why and what to change, exits 1, and keeps what was recorded.
TEST(RankFailure, ANonFiniteLossStopsTheRunAndSaysWhy) {
  const auto dir = testing::freshTempDir("diverged");
  auto r = testing::runShardscope({"run", "--model", "mlp", "--world", "2", "--lr", "1e30", "--steps", "200",
                                   "--summary", dir + "/summary.json"}, {}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged, so the run was stopped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Lower --lr (it is 1e+30)"), std::string::npos) << r.output;
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_LT(summary["steps"].size(), 10u) << "stopped at once, not after 200 nan steps";
  EXPECT_GE(summary["steps"].size(), 1u);
}

TEST(RankFailure, RankErrorMessageReachesTheUser) {
  const auto dir = testing::freshTempDir("rank_error");
  auto r = testing::runShardscope(argsWithSummary(dir + "/summary.json"),
                                  {"SHARDSCOPE_FAULT=rank=2,step=0,mode=error"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 2 failed during step 1: injected fault"), std::string::npos)
      << r.output;
  EXPECT_LT(r.seconds, 60.0);
}

}  // namespace
}  // namespace shardscope
