// HSDP on a real run: a (replicate, shard) mesh of rank processes, each holding 1/S of every unit,
// its all-gathers and reduce-scatters inside its shard group and its gradient all-reduces across
// its replicate group, every collective named by its group in the trace.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/comm/process_mesh.h"
#include "trace/events.h"
#include "config/model_layout.h"
#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

TEST(ProcessMesh, RowsAreShardGroupsAndColumnsReplicateGroups) {
  // World 6 in shard groups of 3, as FSDP2's init_device_mesh((2, 3), ("replicate", "shard")).
  const MeshPlace r4 = meshPlace(4, 3);
  EXPECT_EQ(r4.shardGroup, 1);
  EXPECT_EQ(r4.shardRank, 1);
  EXPECT_EQ(r4.replicateGroup, 1);
  EXPECT_EQ(r4.replicateRank, 1);
  const MeshPlace r2 = meshPlace(2, 3);
  EXPECT_EQ(r2.shardGroup, 0);
  EXPECT_EQ(r2.shardRank, 2);
  EXPECT_EQ(r2.replicateGroup, 2);
  EXPECT_EQ(r2.replicateRank, 0);
  // The trace's view of the same grid (what the ring view names its ranks by) agrees, rank by rank.
  for (int rank = 0; rank < 6; ++rank) {
    const MeshPlace place = meshPlace(rank, 3);
    const auto row = trace::processGroupMembers(trace::ProcessGroup::Shard, rank, 3, 6);
    const auto column = trace::processGroupMembers(trace::ProcessGroup::Replicate, rank, 2, 6);
    EXPECT_EQ(row, (std::vector<int>{3 * place.shardGroup, 3 * place.shardGroup + 1, 3 * place.shardGroup + 2}));
    EXPECT_EQ(column, (std::vector<int>{place.replicateGroup, place.replicateGroup + 3}));
    EXPECT_EQ(row[place.shardRank], rank);
    EXPECT_EQ(column[place.replicateRank], rank);
  }
}

TEST(HybridShard, RanksHoldTheirGroupsShardAndEachCollectiveRunsInItsGroup) {
  config::RunConfig c = testing::tinyGptConfig();
  c.world = 4;
  c.batch = 8;
  c.steps = 2;
  c.strategy = config::StrategyKind::HybridShard;
  c.shardGroupSize = 2;
  const auto dir = testing::freshTempDir("hybrid_shard");
  const auto r = testing::runShardscope(
      testing::runArgsOf(c, {"--export", dir, "--trace", dir + "/trace.json", "--summary", dir + "/summary.json"}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["mesh"]["shard_group_size"], 2);
  EXPECT_EQ(summary["mesh"]["replicas"], 2);
  // What a rank sends per step, split by group: the replicate group carries the gradient shards.
  const auto& byGroup = summary["ranks"][0]["traffic_per_step"]["sent_bytes_by_group"];
  EXPECT_GT(byGroup["shard"].get<double>(), 0);
  EXPECT_GT(byGroup["replicate"].get<double>(), 0);
  EXPECT_NEAR(byGroup["world"].get<double>() + byGroup["shard"].get<double>() + byGroup["replicate"].get<double>(),
              summary["ranks"][0]["traffic_per_step"]["sent_bytes"].get<double>(), 1.0);

  // Each unit padded to a multiple of S = 2, not of the world: every rank holds half of it.
  int64_t padded = 0, units = 0;
  for (int64_t n : config::unitElements(c)) {
    padded += (n + 1) / 2 * 2;
    ++units;
  }
  for (int rank = 0; rank < c.world; ++rank) {
    std::ifstream in(dir + "/held_rank" + std::to_string(rank) + ".json");
    const auto held = nlohmann::json::parse(in);
    int64_t shardBytes = 0;
    for (const auto& t : held["tensors"]) {
      if (t["role"] == "param_shard") shardBytes += t["bytes"].get<int64_t>();
    }
    EXPECT_EQ(shardBytes, padded / 2 * 4) << "rank " << rank;
  }

  // Per rank and step: (op, group) -> count, and the group sizes each ran with.
  std::map<std::pair<std::string, std::string>, int> count;
  std::map<std::string, std::set<int>> sizes;
  const auto trace = nlohmann::json::parse(std::ifstream(dir + "/trace.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "comm" || e["pid"] != 0 || e["args"]["step"] != 1) continue;
    const auto& a = e["args"];
    const std::string group = a["process_group"];
    ++count[{a["op"].get<std::string>(), group}];
    sizes[group].insert(a["group_size"].get<int>());
    if (group != "world")
      EXPECT_NE(e["name"].get<std::string>().find("[" + group + "]"), std::string::npos) << e.dump();
  }
  EXPECT_EQ(sizes["shard"], std::set<int>{2});
  EXPECT_EQ(sizes["replicate"], std::set<int>{2});
  EXPECT_EQ(sizes["world"], std::set<int>{4}) << "only the loss for the log line spans the world";
  // full_shard's schedule inside the group: the root gathered once, every block twice.
  EXPECT_EQ((count[{"all_gather", "shard"}]), 1 + 2 * c.layers);
  EXPECT_EQ((count[{"reduce_scatter", "shard"}]), units);
  EXPECT_EQ((count[{"all_reduce", "replicate"}]), units) << "one all-reduce per gradient shard";
  EXPECT_EQ((count[{"all_reduce", "world"}]), 1);
  EXPECT_EQ((count[{"all_gather", "world"}] + count[{"reduce_scatter", "world"}]), 0);
}

TEST(HybridShard, AShardGroupThatDoesNotDivideTheWorldIsRefusedBeforeAnyRankStarts) {
  config::RunConfig c = testing::tinyGptConfig();
  c.world = 6;
  c.batch = 6;
  c.strategy = config::StrategyKind::HybridShard;
  c.shardGroupSize = 4;
  const auto r = testing::runShardscope(testing::runArgsOf(c));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--shard-group-size 4 does not divide --world 6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1, 2, 3, 6"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace shardscope::engine
