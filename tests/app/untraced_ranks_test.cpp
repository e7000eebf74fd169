// Not traced is not empty: a job's summary read from some of its ranks' traces marks the others as
// untraced, with null figures, never as ranks that ran nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::app {
namespace {

TEST(UntracedRanks, ARankWithoutAFileIsMarkedAndMeasuresNothing) {
  namespace fs = std::filesystem;
  const std::string job = SHARDSCOPE_TEST_DATA "/pytorch_nccl_h200/tp_fsdp_w4/";
  const auto dir = testing::freshTempDir("untraced");
  for (const char* file : {"rank-0.pt.trace.json.gz", "rank-1.pt.trace.json.gz"}) {
    fs::copy_file(job + file, dir + "/" + file);
  }
  const auto r = testing::runShardscope({"view", dir, "--summary", dir + "/summary.json"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto ranks = nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["ranks"];
  ASSERT_EQ(ranks.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const bool traced = rank < 2;
    EXPECT_EQ(ranks[rank].value("traced", true), traced) << "rank " << rank;
    EXPECT_EQ(ranks[rank]["collectives"].is_null(), !traced) << "rank " << rank;
  }
}

}  // namespace
}  // namespace shardscope::app
