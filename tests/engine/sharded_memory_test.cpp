// Between steps, a full_shard rank holds only its 1/N shard of every unit (plus the gradient and
// optimizer state of that shard); a ddp rank holds everything. Inspects the tensors each rank
// reports it keeps (held_rank*.json), including the storage behind the gathered buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/models/model.h"
#include "engine/models/make_model.h"
#include "config/model_layout.h"
#include "tests/support/run_cli.h"
#include "tests/support/mode_of.h"

namespace shardscope::engine {
namespace {

std::map<std::string, int64_t> bytesByRole(const nlohmann::json& held) {
  std::map<std::string, int64_t> out;
  for (const auto& t : held["tensors"]) out[t["role"].get<std::string>()] += t["bytes"].get<int64_t>();
  return out;
}

nlohmann::json heldOf(const std::string& dir, int rank) {
  std::ifstream in(dir + "/held_rank" + std::to_string(rank) + ".json");
  return nlohmann::json::parse(in);
}

int64_t paddedUnitElements(const config::RunConfig& c, int world) {
  int64_t total = 0;
  for (int64_t n : config::unitElements(c)) total += (n + world - 1) / world * world;
  return total;
}

TEST(ShardedMemory, FullShardRanksHoldOnlyTheirShard) {
  config::RunConfig c = testing::tinyGptConfig();
  const int world = 3;
  c.world = world;
  c.batch = 6;
  const auto shardedDir = testing::freshTempDir("held_full_shard");
  const auto ddpDir = testing::freshTempDir("held_ddp");
  auto runArgs = [&](const std::string& strategy, const std::string& dir) {
    config::RunConfig r = c;
    r.strategy = testing::modeOf<config::StrategyKind>(strategy);
    auto args = testing::optionsOf(r);
    args.insert(args.begin(), "run");
    args.insert(args.end(), {"--export", dir});
    return args;
  };
  const auto sharded = runArgs("full_shard", shardedDir);
  const auto ddp = runArgs("ddp", ddpDir);
  auto r1 = testing::runShardscope(sharded);
  ASSERT_EQ(r1.exitCode, 0) << r1.output;
  auto r2 = testing::runShardscope(ddp);
  ASSERT_EQ(r2.exitCode, 0) << r2.output;

  const int64_t fullBytes = makeModel(c)->parameterCount() * 4;
  const int64_t shardBytes = paddedUnitElements(c, world) / world * 4;
  for (int rank = 0; rank < world; ++rank) {
    auto held = heldOf(shardedDir, rank);
    auto roles = bytesByRole(held);
    EXPECT_EQ(roles["param_shard"], shardBytes) << "rank " << rank;
    EXPECT_EQ(roles["grad_shard"], 0) << "sharded gradients are freed after the optimizer step "
                                         "(zero_grad(set_to_none=True)); rank "
                                      << rank;
    EXPECT_EQ(roles["optimizer_state"], 2 * shardBytes) << "Adam: exp_avg + exp_avg_sq";
    EXPECT_EQ(roles["param_gathered"], 0) << "gathered storage must be freed between steps";
    EXPECT_EQ(roles["grad_full"], 0) << "unsharded gradients must be freed after reduce-scatter";
    for (const auto& t : held["tensors"]) {
      EXPECT_LT(t["numel"].get<int64_t>() * 4, fullBytes / 2) << t.dump();
    }

    auto ddpRoles = bytesByRole(heldOf(ddpDir, rank));
    EXPECT_EQ(ddpRoles["param_shard"], fullBytes);
    EXPECT_EQ(ddpRoles["optimizer_state"], 2 * fullBytes);
    // params + grads + optimizer state: full_shard is 1/N of ddp's, up to padding.
    const double ratio = static_cast<double>(roles["param_shard"] + shardBytes + roles["optimizer_state"]) /
                         static_cast<double>(ddpRoles["param_shard"] + fullBytes + ddpRoles["optimizer_state"]);
    EXPECT_NEAR(ratio, 1.0 / world, 0.01);
  }
}

// Initial values are generated one parameter at a time and copied into their unit's flat buffer,
// so while a sharded strategy initialises, a rank holds (role other) at most the root's values,
// one block's, and the parameter being copied: not several copies of a block (values, their
// concatenation and the padded buffer), and never the whole model.
TEST(ShardedMemory, InitialisationHoldsOneBlockAtATime) {
  config::RunConfig c = testing::tinyGptConfig();
  c.hidden = 64;  // blocks much larger than the root
  c.strategy = config::StrategyKind::FullShard;
  const auto dir = testing::freshTempDir("init_one_block");
  auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto units = config::unitElements(c);  // blocks, then the root
  int64_t largestParam = 0;
  const auto model = makeModel(c);  // kept: a range-for over a temporary's member would dangle
  for (const auto& p : model->params()) largestParam = std::max(largestParam, p.numel());
  auto padded = [&](int64_t n) { return (n + c.world - 1) / c.world * c.world; };
  const int64_t block = padded(units.front()), root = padded(units.back());
  ASSERT_GT(block, 4 * root) << "the model must make a block's copies stand out";
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  for (const auto& rank : summary["ranks"]) {
    const int64_t other = rank["peak_bytes"]["other"].get<int64_t>();
    EXPECT_LE(other, 4 * (root + block + largestParam)) << "rank " << rank["rank"];
    EXPECT_GE(other, 4 * block) << "a block's values pass through, recorded";
  }
}

// FSDP's price for skipping the reduce-scatter of early micro-batches (no_sync): a rank holds every
// unit's unsharded gradients until the last micro-batch, as much as DDP holds; one micro-batch
// per step holds about one unit's at a time.
TEST(ShardedMemory, NoSyncAccumulationHoldsEveryUnitsFullGradients) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::FullShard;
  c.batch = 8;
  const int64_t fullGradBytes = 4 * makeModel(c)->parameterCount();
  for (const int micro : {1, 2}) {
    c.accumulate = micro;
    const auto dir = testing::freshTempDir("no_sync_" + std::to_string(micro));
    auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
    for (const auto& rank : summary["ranks"]) {
      const int64_t peak = rank["peak_bytes"]["grad_full"].get<int64_t>();
      if (micro == 1)
        EXPECT_LT(peak, fullGradBytes / 2) << "one unit's gradients at a time";
      else
        EXPECT_GE(peak, fullGradBytes) << "every unit's, kept for the last micro-batch";
    }
  }
}

}  // namespace
}  // namespace shardscope::engine
