// CUDA memory snapshots on their own (no torch.profiler traces) hold memory and nothing else: no
// step, collective or compute span. Their summary says so with null, not with zeros that read as
// measured (a step time of 0, an overlap of 0 %), and reads back as unknown. The snapshots are a
// real DDP job's, recorded on an H200 (tests/data/pytorch_cuda_h200).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stats/summary_reader.h"
#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

TEST(SnapshotSummary, PerStepFiguresAreNullAndReadBackAsUnknown) {
  const std::string dir = testing::freshTempDir("snapshot_summary_job");
  const std::string source = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/ddp_w2/";
  for (int r = 0; r < 2; ++r) {
    const std::string name = "rank-" + std::to_string(r) + ".memory.pickle.gz";
    std::filesystem::copy_file(source + name, dir + "/" + name);
  }
  const std::string path = testing::freshTempDir("snapshot_summary") + "/summary.json";
  const auto view = testing::runShardscope({"view", dir, "--summary", path});
  ASSERT_EQ(view.exitCode, 0) << view.output;
  const auto summary = nlohmann::json::parse(testing::fileContents(path));
  EXPECT_EQ(summary["source"], "torch.cuda.memory");
  ASSERT_EQ(summary["ranks"].size(), 2u);
  for (const auto& rank : summary["ranks"]) {
    EXPECT_GT(rank["peak_bytes"]["total"].get<int64_t>(), 0) << "the snapshots' memory is measured";
    EXPECT_EQ(rank["recorded_steps"], 0);
    EXPECT_TRUE(rank["step_time_s"].empty());
    for (const char* key : {"steady_step_time_s", "overlap_pct", "steady_exposed_comm_s", "recompute_s_per_step",
                            "activation_saved_bytes"}) {
      EXPECT_TRUE(rank[key].is_null()) << key << " is " << rank[key].dump() << ": no step was recorded";
    }
  }
  const auto loaded = stats::loadSummary(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.runs.size(), 1u);
  const auto& ranks = loaded.runs[0].ranks;
  EXPECT_TRUE(stats::anyMemoryRecorded(ranks));
  EXPECT_FALSE(stats::anyStepRecorded(ranks)) << "the window says unknown, not 0 %";
  EXPECT_FALSE(stats::anyStepTimed(ranks));
}

}  // namespace
}  // namespace shardscope
