// Tensor parallelism (--tp): a rank's slices join back into the parameter, and a (data, tensor) mesh
// trains to the same parameters as one process on the whole batch, under every 1-D strategy. Runs
// the real binary: one OS process per rank, the tensor groups' all-reduces over Gloo.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "config/strategies.h"
#include "config/tensor_parallel.h"
#include "engine/models/model.h"
#include "engine/models/tensor_parallel.h"
#include "engine/recording/tensor_files.h"
#include "engine/strategies/reference_trainer.h"
#include "tests/support/mode_of.h"
#include "tests/support/run_cli.h"
#include "trace/events.h"

namespace shardscope::engine {
namespace {

TEST(TensorParallel, SlicesJoinBackIntoTheWholeParameter) {
  const at::Tensor full = at::arange(6 * 4, at::kFloat).view({6, 4});
  for (auto split : {config::TensorSplit::Columns, config::TensorSplit::Rows, config::TensorSplit::FusedColumns3}) {
    std::vector<at::Tensor> slices;
    for (int t = 0; t < 2; ++t) slices.push_back(tensorSlice(full, split, 2, t));
    EXPECT_TRUE(at::equal(joinTensorSlices(slices, split), full)) << static_cast<int>(split);
  }
  EXPECT_TRUE(at::equal(tensorSlice(full, config::TensorSplit::Rows, 2, 1), full.narrow(1, 2, 2)));
  // qkv: rank 1 of 2 holds the second half of q's rows, of k's and of v's (its heads of each).
  const at::Tensor qkv = tensorSlice(full, config::TensorSplit::FusedColumns3, 2, 1);
  EXPECT_TRUE(at::equal(qkv, at::cat({full.narrow(0, 1, 1), full.narrow(0, 3, 1), full.narrow(0, 5, 1)})));
}

// The groups a view draws a collective among (the ring, the issued collectives, stragglers), from
// what the event carries: its group and the group's size. World 6 at --tp 3: tensor groups 0-2 and
// 3-5, data groups {0, 3}, {1, 4}, {2, 5}, as connectMesh makes them.
TEST(TensorParallel, AViewFindsTheRanksOfATensorOrDataGroup) {
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Tensor, 4, 3, 6), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Tensor, 0, 3, 6), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Data, 4, 2, 6), (std::vector<int>{1, 4}));
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Data, 2, 2, 6), (std::vector<int>{2, 5}));
  // A hybrid strategy's groups among the data ranks, at rank 5 of 8 under --tp 2 with shard groups
  // of 2: data rank 2, tensor rank 1; its shard group data ranks {2, 3}, its replicate group {0, 2}.
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Shard, 5, 2, 8, 2), (std::vector<int>{5, 7}));
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Replicate, 5, 2, 8, 2), (std::vector<int>{1, 5}));
  EXPECT_EQ(trace::processGroupMembers(trace::ProcessGroup::Tensor, 5, 2, 8, 2), (std::vector<int>{4, 5}));
  const config::TensorPlace place = config::tensorPlace(4, 6, 3);
  EXPECT_EQ(place.dataRank, 1);
  EXPECT_EQ(place.tensorRank, 1);
  EXPECT_EQ(place.dataRanks, 2);
}

config::RunConfig tpConfig(const std::string& model, int tp) {
  config::RunConfig c;
  c.model = testing::modeOf<config::ModelKind>(model);
  c.layers = 2;
  c.batch = 12;
  c.steps = 3;
  c.optimizer = config::OptimizerKind::Sgd;  // blind to no gradient's scale: a missing or doubled sum shows
  c.lr = 0.5;
  c.seed = 7;
  // Odd widths at --tp 3, as the issue asks: 15 = 3 x 5.
  c.hidden = tp == 3 ? 15 : 14;
  c.features = 7;
  c.classes = 5;
  if (model == "gpt") {
    c.hidden = tp == 3 ? 15 : 12;
    c.heads = tp == 3 ? 3 : 6;
    c.seq = 5;
    c.vocab = 11;
  }
  return c;
}

// The run of `c` under `strategy` at `world` ranks, exporting into `dir` with a summary there.
std::vector<std::string> tpArgs(config::RunConfig c, const std::string& strategy, int world, const std::string& dir) {
  c.strategy = testing::modeOf<config::StrategyKind>(strategy);
  c.world = world;
  return testing::runArgsOf(c, {"--export", dir, "--summary", dir + "/summary.json"});
}

double relativeDifference(const at::Tensor& a, const at::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-12);
  return (a - b).abs().max().item<double>() / scale;
}

using Case = std::tuple<std::string, std::string, int, int>;  // model, strategy, world, tp

class TensorParallelParity : public ::testing::TestWithParam<Case> {};

// Trains `config` (its tp set) under `strategy` at `world` ranks and holds it to one process on the
// whole batch (`reference`: the same config without a tensor group); returns the run's summary.
nlohmann::json expectTrainsAsOneProcess(const config::RunConfig& config, const ReferenceResult& ref,
                                        const std::string& strategy, int world, const std::string& dir) {
  auto run = testing::runShardscope(tpArgs(config, strategy, world, dir));
  EXPECT_EQ(run.exitCode, 0) << run.output;
  if (run.exitCode != 0) return nlohmann::json::object();
  auto trained = loadTensorDict(dir + "/final.pt");
  auto initial = loadTensorDict(dir + "/init.pt");
  EXPECT_EQ(trained.size(), ref.parameters.size());
  for (const auto& [name, expected] : ref.parameters) {
    if (!trained.count(name)) {
      ADD_FAILURE() << name << " is not in final.pt";
      continue;
    }
    EXPECT_EQ(trained[name].sizes(), expected.sizes()) << name << ": the slices were not joined";
    if (trained[name].sizes() != expected.sizes()) continue;
    EXPECT_LE(relativeDifference(trained[name], expected), 1e-5) << name;
    EXPECT_GT(relativeDifference(initial[name], expected), 1e-4) << name << " did not move";
  }
  auto losses = loadTensor(dir + "/losses.pt");
  for (int s = 0; s < config.steps; ++s) {
    EXPECT_NEAR(losses[s].item<double>(), ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << s;
  }
  // The tensor groups' collectives ran in their own group; the strategy's in the data groups.
  std::ifstream in(dir + "/summary.json");
  auto summary = nlohmann::json::parse(in);
  // A hybrid strategy's in its shard and replicate groups among the data ranks.
  const bool hybrid = config::traitsOf(testing::modeOf<config::StrategyKind>(strategy)).replicatesShardGroups;
  for (const auto& rank : summary["ranks"]) {
    const auto& byGroup = rank["traffic_per_step"]["sent_bytes_by_group"];
    EXPECT_GT(byGroup["tensor"].get<double>(), 0) << rank["rank"];
    if (hybrid) {
      EXPECT_GT(byGroup["shard"].get<double>(), 0) << rank["rank"];
      EXPECT_GT(byGroup["replicate"].get<double>(), 0) << rank["rank"];
      EXPECT_EQ(byGroup["data"].get<double>(), 0) << rank["rank"];
      continue;
    }
    if (world > config.tp) EXPECT_GT(byGroup["data"].get<double>(), 0) << rank["rank"];
    EXPECT_EQ(byGroup["shard"].get<double>(), 0) << "a 1-D strategy under --tp works over the data group";
  }
  EXPECT_EQ(summary["mesh"]["tensor_parallel"], config.tp);
  return summary;
}

TEST_P(TensorParallelParity, TrainsAsOneProcessOnTheWholeBatch) {
  const auto& [model, strategy, world, tp] = GetParam();
  config::RunConfig config = tpConfig(model, tp);
  const ReferenceResult ref = trainSingleProcess(config);  // built without a tensor group: the whole model
  config.tp = tp;
  expectTrainsAsOneProcess(config, ref, strategy, world,
                           testing::freshTempDir("tp_" + model + "_" + strategy + "_" + std::to_string(world)));
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const auto& [model, strategy, world, tp] = info.param;
  return model + "_" + strategy + "_world" + std::to_string(world) + "_tp" + std::to_string(tp);
}

INSTANTIATE_TEST_SUITE_P(OneTensorGroup, TensorParallelParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("ddp", "no_shard", "zero1", "full_shard",
                                                              "shard_grad_op"),
                                            ::testing::Values(2), ::testing::Values(2)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(DataTimesTensor, TensorParallelParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"), ::testing::Values("zero1", "full_shard"),
                                            ::testing::Values(4), ::testing::Values(2)),
                         caseName);
// A hybrid strategy under --tp: 8 ranks, tensor groups of 2, the 4 data ranks a 2 x 2 (replicate,
// shard) grid (torchtitan's (dp_replicate, dp_shard, tp) mesh): shard groups {0, 2}, {1, 3},
// {4, 6}, {5, 7}; replicate groups {0, 4}, {1, 5}, {2, 6}, {3, 7}.
INSTANTIATE_TEST_SUITE_P(HybridTimesTensor, TensorParallelParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("hybrid_shard", "hybrid_shard_zero2"),
                                            ::testing::Values(8), ::testing::Values(2)),
                         caseName);
INSTANTIATE_TEST_SUITE_P(OddWidths, TensorParallelParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"), ::testing::Values("ddp", "full_shard"),
                                            ::testing::Values(6), ::testing::Values(3)),
                         caseName);

// --sequence-parallel: the residual stream, the norms and the embedding's output split along the
// sequence over the tensor group (all-gathers and reduce-scatters where --tp alone all-reduces, the
// norms' and row-parallel biases' gradients all-reduced): still one process's training, under each
// strategy, with a data dimension, at --tp 3 on odd widths, and with checkpointed blocks (each
// recomputed whole, its collectives again).
using SequenceCase = std::tuple<std::string, int, int, bool>;  // strategy, world, tp, checkpointed

class SequenceParallelParity : public ::testing::TestWithParam<SequenceCase> {};

TEST_P(SequenceParallelParity, TrainsAsOneProcessOnTheWholeBatch) {
  const auto& [strategy, world, tp, checkpointed] = GetParam();
  config::RunConfig config = tpConfig("gpt", tp);
  config.seq = 2 * tp;  // a multiple of --tp: each rank keeps seq / tp tokens
  const ReferenceResult ref = trainSingleProcess(config);
  config.tp = tp;
  config.sequenceParallel = true;
  if (checkpointed) config.activationCheckpointing = config::Checkpointing::Blocks;
  const auto summary = expectTrainsAsOneProcess(
      config, ref, strategy, world,
      testing::freshTempDir("sp_" + strategy + "_" + std::to_string(world) + (checkpointed ? "_ac" : "")));
  for (const auto& rank : summary["ranks"]) {
    // The tensor group reduce-scatters along the sequence (ddp itself never reduce-scatters).
    EXPECT_GT(rank["collectives"]["reduce_scatter"]["count"].get<int64_t>(), 0) << rank["rank"];
  }
}

std::string sequenceCaseName(const ::testing::TestParamInfo<SequenceCase>& info) {
  const auto& [strategy, world, tp, checkpointed] = info.param;
  return strategy + "_world" + std::to_string(world) + "_tp" + std::to_string(tp) +
         (checkpointed ? "_checkpointed" : "");
}

INSTANTIATE_TEST_SUITE_P(Gpt, SequenceParallelParity,
                         ::testing::Values(SequenceCase{"ddp", 2, 2, false}, SequenceCase{"full_shard", 2, 2, false},
                                           SequenceCase{"zero1", 4, 2, false},
                                           SequenceCase{"shard_grad_op", 4, 2, false},
                                           SequenceCase{"full_shard", 6, 3, false},
                                           SequenceCase{"full_shard", 2, 2, true}),
                         sequenceCaseName);

// A checkpointed block recomputed for backward under --tp: its attention's all-reduce runs again,
// its MLP projection is left uncomputed (the all-reduce's backward passes the gradient through), and
// training is unchanged: the same parameters as one process, within the same tolerance.
TEST(TensorParallel, CheckpointedBlocksTrainAsOneProcess) {
  config::RunConfig config = tpConfig("gpt", 2);
  const ReferenceResult ref = trainSingleProcess(config);
  config.tp = 2;
  config.activationCheckpointing = config::Checkpointing::Blocks;
  const auto dir = testing::freshTempDir("tp_checkpointed");
  auto run = testing::runShardscope(tpArgs(config, "full_shard", 2, dir));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto trained = loadTensorDict(dir + "/final.pt");
  for (const auto& [name, expected] : ref.parameters) {
    EXPECT_LE(relativeDifference(trained.at(name), expected), 1e-5) << name;
  }
}

// LoRA under --tp: each adapter split as its base weight is (a column-parallel weight's B by
// outputs, a row-parallel one's A by inputs), its other half whole with its gradient summed over the
// tensor group; the base frozen. Trains the adapters as one process does, and leaves every base
// parameter bit-identical, under ddp at world 2 and full_shard on a 2 x 2 mesh, both models.
using LoraCase = std::tuple<std::string, std::string, int>;  // model, strategy, world

class TensorParallelLora : public ::testing::TestWithParam<LoraCase> {};

TEST_P(TensorParallelLora, TrainsTheAdaptersAsOneProcessAndKeepsTheBaseFrozen) {
  const auto& [model, strategy, world] = GetParam();
  config::RunConfig config = tpConfig(model, 2);
  config.loraRank = 2;
  const ReferenceResult ref = trainSingleProcess(config);
  config.tp = 2;
  const auto dir = testing::freshTempDir("tp_lora_" + model + "_" + strategy);
  auto run = testing::runShardscope(tpArgs(config, strategy, world, dir));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto trained = loadTensorDict(dir + "/final.pt");
  auto initial = loadTensorDict(dir + "/init.pt");
  int adapters = 0;
  for (const auto& [name, expected] : ref.parameters) {
    ASSERT_TRUE(trained.count(name)) << name;
    ASSERT_EQ(trained[name].sizes(), expected.sizes()) << name << ": the slices were not joined";
    EXPECT_LE(relativeDifference(trained[name], expected), 1e-5) << name;
    const bool adapter = isLoraA(name) || isLoraB(name);
    adapters += adapter ? 1 : 0;
    // A moves little in 3 steps (B starts at zero): 5e-5 of itself here, above any rounding.
    if (adapter) EXPECT_GT(relativeDifference(initial[name], expected), 1e-6) << name << " did not move";
    if (!adapter) EXPECT_TRUE(at::equal(trained[name], initial[name])) << name << " is frozen, and moved";
  }
  EXPECT_EQ(adapters, model == "gpt" ? 2 * 4 * config.layers : 2 * config.layers);
}

std::string loraCaseName(const ::testing::TestParamInfo<LoraCase>& info) {
  const auto& [model, strategy, world] = info.param;
  return model + "_" + strategy + "_world" + std::to_string(world);
}

INSTANTIATE_TEST_SUITE_P(BothModels, TensorParallelLora,
                         ::testing::Values(LoraCase{"gpt", "ddp", 2}, LoraCase{"gpt", "full_shard", 4},
                                           LoraCase{"mlp", "ddp", 2}, LoraCase{"mlp", "full_shard", 4}),
                         loraCaseName);

// What a rank holds is its slice: 1/N of each split matrix, whole norms and embeddings.
TEST(TensorParallel, ARankHoldsItsSliceOfEachSplitMatrix) {
  config::RunConfig config = tpConfig("gpt", 2);
  config.tp = 2;
  config.steps = 1;
  const auto dir = testing::freshTempDir("tp_held");
  auto run = testing::runShardscope(tpArgs(config, "ddp", 2, dir));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  std::ifstream in(dir + "/held_rank1.json");
  std::map<std::string, int64_t> params;
  const auto held = nlohmann::json::parse(in);  // kept: a range-for over a temporary's member would dangle
  for (const auto& t : held["tensors"]) {
    if (t["role"] == "param_shard") params[t["name"].get<std::string>()] = t["numel"].get<int64_t>();
  }
  const int64_t h = config.hidden;
  EXPECT_EQ(params["blocks.0.attn.qkv.weight"], 3 * h * h / 2);
  EXPECT_EQ(params["blocks.0.attn.proj.weight"], h * h / 2);
  EXPECT_EQ(params["blocks.0.mlp.fc.weight"], 4 * h * h / 2);
  EXPECT_EQ(params["blocks.0.mlp.fc.bias"], 4 * h / 2);
  EXPECT_EQ(params["blocks.0.mlp.proj.bias"], h) << "added after the all-reduce: whole";
  EXPECT_EQ(params["blocks.0.ln1.weight"], h);
  EXPECT_EQ(params["wte.weight"], config.vocab * h) << "the embedding is not vocabulary-parallel";
}

// Under LoRA an adapter splits as its base weight: qkv's B (3h x r) by its heads, its A (r x h)
// whole; attn.proj's A (r x h) by its inputs, its B (h x r) whole.
TEST(TensorParallel, ALoraAdapterSplitsAsItsBaseWeight) {
  config::RunConfig config = tpConfig("gpt", 2);
  config.tp = 2;
  config.loraRank = 2;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& spec : config::tensorParallelLayout(config)) shapes[spec.name] = spec.shape;
  const int64_t h = config.hidden, r = config.loraRank;
  EXPECT_EQ(shapes["blocks.0.attn.qkv.lora_B"], (std::vector<int64_t>{3 * h / 2, r}));
  EXPECT_EQ(shapes["blocks.0.attn.qkv.lora_A"], (std::vector<int64_t>{r, h}));
  EXPECT_EQ(shapes["blocks.0.attn.proj.lora_A"], (std::vector<int64_t>{r, h / 2}));
  EXPECT_EQ(shapes["blocks.0.attn.proj.lora_B"], (std::vector<int64_t>{h, r}));
  EXPECT_EQ(shapes["blocks.0.mlp.fc.lora_B"], (std::vector<int64_t>{4 * h / 2, r}));
  EXPECT_EQ(shapes["blocks.0.mlp.proj.lora_A"], (std::vector<int64_t>{r, 4 * h / 2}));
}

}  // namespace
}  // namespace shardscope::engine
