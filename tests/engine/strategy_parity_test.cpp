// Every strategy, at every world size, must train to the same parameters as one process on the whole
// global batch. Runs the real binary: one OS process per rank, Gloo collectives over loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/models/make_model.h"
#include "engine/models/model.h"
#include "engine/strategies/reference_trainer.h"
#include "engine/recording/tensor_files.h"
#include "tests/support/run_cli.h"
#include "config/model_layout.h"
#include "tests/support/mode_of.h"

namespace shardscope::engine {
namespace {

// Sizes chosen so that no unit's element count divides evenly by 3 or 4 (padding is exercised).
config::RunConfig smallConfig(const std::string& model, const std::string& optimizer = "adam") {
  config::RunConfig c;
  c.model = testing::modeOf<config::ModelKind>(model);
  c.layers = 2;
  c.batch = 12;
  c.steps = 3;
  c.optimizer = testing::modeOf<config::OptimizerKind>(optimizer);
  c.lr = optimizer == "sgd" ? 0.5 : 1e-2;  // large enough that every tensor visibly moves
  c.seed = 7;
  if (model == "mlp") {
    c.hidden = 13;
    c.features = 7;
    c.classes = 5;
  } else {
    c.hidden = 12;
    c.heads = 3;
    c.seq = 5;
    c.vocab = 11;
  }
  return c;
}

std::vector<std::string> cliArgs(const config::RunConfig& c, const std::string& strategy, int world,
                                 const std::string& exportDir) {
  return {"run",
          "--model",
          config::modeName(c.model),
          "--layers",
          std::to_string(c.layers),
          "--hidden",
          std::to_string(c.hidden),
          "--features",
          std::to_string(c.features),
          "--classes",
          std::to_string(c.classes),
          "--heads",
          std::to_string(c.heads),
          "--seq",
          std::to_string(c.seq),
          "--vocab",
          std::to_string(c.vocab),
          "--batch",
          std::to_string(c.batch),
          "--steps",
          std::to_string(c.steps),
          "--lr",
          std::to_string(c.lr),
          "--optimizer",
          config::modeName(c.optimizer),
          "--seed",
          std::to_string(c.seed),
          "--strategy",
          strategy,
          "--world",
          std::to_string(world),
          "--export",
          exportDir};
}

// A run with --export: its initial and final parameters by name.
struct ExportedRun {
  std::map<std::string, at::Tensor> initial, trained;
};

ExportedRun runExported(const config::RunConfig& c, const std::string& strategy, int world, const std::string& dir,
                        const std::vector<std::string>& extra) {
  auto args = cliArgs(c, strategy, world, dir);
  args.insert(args.end(), extra.begin(), extra.end());
  auto run = testing::runShardscope(args);
  EXPECT_EQ(run.exitCode, 0) << run.output;
  if (run.exitCode != 0) return {};
  return {loadTensorDict(dir + "/init.pt"), loadTensorDict(dir + "/final.pt")};
}

// max |a - b| / max |b|, per tensor: differences measured against the tensor's own scale.
double relativeDifference(const at::Tensor& a, const at::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-12);
  return (a - b).abs().max().item<double>() / scale;
}

const ReferenceResult& reference(const std::string& model, const std::string& optimizer) {
  static std::map<std::string, ReferenceResult> cache;
  const std::string key = model + "/" + optimizer;
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, trainSingleProcess(smallConfig(model, optimizer))).first;
  }
  return it->second;
}

using Case = std::tuple<std::string, std::string, int, std::string>;  // model, strategy, world, optimizer

class StrategyParity : public ::testing::TestWithParam<Case> {};

TEST_P(StrategyParity, MatchesSingleProcessTraining) {
  const auto& [model, strategy, world, optimizer] = GetParam();
  const config::RunConfig config = smallConfig(model, optimizer);
  const auto dir = testing::freshTempDir(model + "_" + strategy + "_" + std::to_string(world) + "_" + optimizer);
  auto run = testing::runShardscope(cliArgs(config, strategy, world, dir));
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_NE(run.output.find("step 3/3"), std::string::npos) << run.output;

  const auto& ref = reference(model, optimizer);
  auto trained = loadTensorDict(dir + "/final.pt");
  auto initial = loadTensorDict(dir + "/init.pt");
  ASSERT_EQ(trained.size(), ref.parameters.size());
  // Ranks average their local means where the reference takes one mean: the gradients differ in
  // the last bits. SGD keeps it there. Adam divides a near-zero gradient component by its own
  // square root (plus eps), which grows that rounding into a visible step (as in LoraParity below):
  // at world 3, gpt's blocks.0.attn.qkv.weight ends 2.2e-5 from the reference on an AMD EPYC
  // (under 1e-5 on the CPU before it; the rank processes' result is the same on both builds). A
  // wrong reduction moves parameters by orders of magnitude more; Adam being blind to a
  // gradient's scale, the SGD cases are the ones that catch a missing 1/N.
  const double tolerance = optimizer == "sgd" ? 1e-5 : 1e-4;
  for (const auto& [name, expected] : ref.parameters) {
    ASSERT_TRUE(trained.count(name)) << name;
    ASSERT_EQ(trained[name].sizes(), expected.sizes()) << name;
    EXPECT_LE(relativeDifference(trained[name], expected), tolerance) << name;
    EXPECT_GT(relativeDifference(initial[name], expected), 10 * tolerance)
        << name << " did not move: the comparison would prove nothing";
  }
  auto losses = loadTensor(dir + "/losses.pt");
  ASSERT_EQ(losses.numel(), config.steps);
  for (int s = 0; s < config.steps; ++s) {
    EXPECT_NEAR(losses[s].item<double>(), ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << s;
  }
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_world" + std::to_string(std::get<2>(info.param)) +
         "_" + std::get<3>(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, StrategyParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("ddp", "zero1", "full_shard", "shard_grad_op"),
                                            ::testing::Values(1, 2, 3, 4), ::testing::Values("adam")),
                         caseName);

// FSDP1's NO_SHARD: DDP's mathematics, a unit's gradients all-reduced together. SGD, which a wrong
// averaging factor would move; world 3 averages over a count that is not a power of two.
INSTANTIATE_TEST_SUITE_P(NoShard, StrategyParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"), ::testing::Values("no_shard"),
                                            ::testing::Values(2, 3), ::testing::Values("sgd", "adam")),
                         caseName);

// HSDP against the same single-process reference: world 2 splits into shard groups of 1 (every
// rank a replica), world 4 into two groups of 2. SGD, which a wrong averaging factor would move.
INSTANTIATE_TEST_SUITE_P(HybridStrategies, StrategyParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("hybrid_shard", "hybrid_shard_zero2"),
                                            ::testing::Values(2, 4), ::testing::Values("sgd")),
                         caseName);

// ZeRO-1 under bf16 keeps fp32 master weights for its slice only, yet computes exactly what DDP
// does with its full fp32 masters: same bf16 compute copies, same fp32 reduction, same update.
TEST(Zero1, Bf16TrainsExactlyAsDdpBf16) {
  const config::RunConfig c = smallConfig("gpt");
  std::map<std::string, std::map<std::string, at::Tensor>> finals;
  std::map<std::string, at::Tensor> losses;
  for (const char* strategy : {"ddp", "zero1"}) {
    const auto dir = testing::freshTempDir(std::string("zero1_bf16_") + strategy);
    auto args = cliArgs(c, strategy, 3, dir);
    args.insert(args.end(), {"--precision", "bf16"});
    auto r = testing::runShardscope(args);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    finals[strategy] = loadTensorDict(dir + "/final.pt");
    losses[strategy] = loadTensor(dir + "/losses.pt");
  }
  EXPECT_LT(relativeDifference(losses["zero1"], losses["ddp"]), 1e-6);
  ASSERT_EQ(finals["zero1"].size(), finals["ddp"].size());
  for (const auto& [name, value] : finals["ddp"]) {
    EXPECT_LT(relativeDifference(finals["zero1"].at(name), value), 1e-6) << name;
  }
}

// ZeRO-1's optimizer steps its slice cut at parameter boundaries, as PyTorch's
// ZeroRedundancyOptimizer steps whole parameters: Adam's temporaries during the step stay the size
// of one parameter, not of the whole slice (which doubled the optimizer_state peak).
TEST(Zero1, AdamTemporariesStayTheSizeOfOneParameter) {
  config::RunConfig c = testing::tinyGptConfig();
  c.hidden = 128;  // blocks' matrices much smaller than a rank's slice
  c.strategy = config::StrategyKind::Zero1;
  int64_t parameters = 0, largest = 0;
  for (const auto& p : config::modelLayout(c)) {
    parameters += p.numel();
    largest = std::max(largest, p.numel());
  }
  const auto dir = testing::freshTempDir("zero1_adam_temporaries");
  auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  const int64_t sliceBytes = (parameters + c.world - 1) / c.world * 4;
  ASSERT_LT(2 * largest * 4, sliceBytes) << "the model must have a parameter smaller than half a slice";
  for (const auto& rank : summary["ranks"]) {
    const int64_t after = rank["after_step_bytes"]["optimizer_state"].get<int64_t>();
    const int64_t peak = rank["peak_bytes"]["optimizer_state"].get<int64_t>();
    EXPECT_EQ(after, 2 * sliceBytes) << "exp_avg and exp_avg_sq of the slice";
    // LibTorch's Adam holds at most two temporaries of the tensor it is stepping (and a few
    // scalar tensors). One flat slice made that two slices.
    EXPECT_LE(peak - after, 2 * largest * 4 + 256) << "rank " << rank["rank"];
    EXPECT_LT(peak - after, sliceBytes) << "rank " << rank["rank"];
    EXPECT_GT(peak, after) << "the step's temporaries are recorded";
  }
}

// Gradient accumulation: three micro-batches per step, reduced once after the last, train every
// strategy to what one process trains on the whole global batch.
using AccumulationCase = std::tuple<std::string, std::string>;  // model, strategy

class AccumulationParity : public ::testing::TestWithParam<AccumulationCase> {};

TEST_P(AccumulationParity, MatchesSingleProcessTrainingOnTheWholeBatch) {
  const auto& [model, strategy] = GetParam();
  const config::RunConfig config = smallConfig(model);  // batch 12: 6 per rank at world 2, 3 micro-batches of 2
  const auto dir = testing::freshTempDir("accumulate_" + model + "_" + strategy);
  auto args = cliArgs(config, strategy, 2, dir);
  args.insert(args.end(), {"--accumulate", "3", "--summary", dir + "/summary.json"});
  auto run = testing::runShardscope(args);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto& ref = reference(model, "adam");
  auto trained = loadTensorDict(dir + "/final.pt");
  ASSERT_EQ(trained.size(), ref.parameters.size());
  for (const auto& [name, expected] : ref.parameters) {
    EXPECT_LE(relativeDifference(trained.at(name), expected), 1e-5) << name;
  }
  auto losses = loadTensor(dir + "/losses.pt");
  for (int s = 0; s < config.steps; ++s) {
    EXPECT_NEAR(losses[s].item<double>(), ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << s;
  }
  // Reduced once per step whatever the micro-batches: the gradient collectives did not triple.
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  const auto& collectives = summary["ranks"][0]["collectives"];
  const bool sharded = strategy == "full_shard" || strategy == "shard_grad_op";
  const int64_t reductions = collectives[sharded ? "reduce_scatter" : "all_reduce"]["count"].get<int64_t>();
  const int64_t perStepUnits = config.layers + 1;
  if (sharded)
    EXPECT_EQ(reductions, config.steps * perStepUnits);
  else
    EXPECT_LE(reductions, config.steps * 4) << "a few buckets and the loss per step, not per micro-batch";
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, AccumulationParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("ddp", "zero1", "full_shard", "shard_grad_op")),
                         [](const ::testing::TestParamInfo<AccumulationCase>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// Under bf16 every strategy adds micro-batch gradients up in fp32: the sharded ones in their fp32
// accumulators (as FSDP2), ddp and zero1 in their fp32 buckets (as PyTorch DDP's fp32 .grad under
// autocast). The same bf16 gradients summed the same way: every strategy trains bit-identically.
// (When ddp and zero1 added them up in bf16, they drifted from the sharded strategies by ~1e-4.)
TEST(Accumulation, Bf16TrainsBitIdenticallyInEveryStrategy) {
  const config::RunConfig config = smallConfig("gpt");
  std::map<std::string, ExportedRun> runs;
  std::map<std::string, at::Tensor> losses;
  for (const std::string strategy : {"shard_grad_op", "full_shard", "ddp", "zero1"}) {
    const auto dir = testing::freshTempDir("accumulate_bf16_" + strategy);
    runs[strategy] = runExported(config, strategy, 2, dir, {"--accumulate", "3", "--precision", "bf16"});
    ASSERT_FALSE(runs[strategy].trained.empty()) << strategy;
    losses[strategy] = loadTensor(dir + "/losses.pt");
  }
  const auto& reference = runs.at("shard_grad_op");
  for (const std::string strategy : {"full_shard", "ddp", "zero1"}) {
    EXPECT_TRUE(losses.at(strategy).equal(losses.at("shard_grad_op")))
        << strategy << ": " << losses.at(strategy) << " vs " << losses.at("shard_grad_op");
    for (const auto& [name, value] : reference.trained) {
      EXPECT_TRUE(runs.at(strategy).trained.at(name).equal(value))
          << strategy << " " << name << ": relative difference "
          << relativeDifference(runs.at(strategy).trained.at(name), value);
    }
  }
}

// LoRA: every strategy trains the adapters as one process does, and leaves every frozen weight
// exactly as it began (no strategy may step, reduce or round what does not train). Plain SGD:
// B starts at zero, and where Adam divides a near-zero gradient of it by its own square root,
// the different summation order of a split batch grows from 1e-7 to 1e-4 of the tensor (PyTorch
// does the same); SGD keeps every difference at the rounding level the bound checks. With
// micro-batches the frozen base is gathered once per micro-batch and only the adapters'
// gradients accumulate, unreduced until the last.
using LoraCase = std::tuple<std::string, std::string, int, int>;  // model, strategy, world, micro-batches

class LoraParity : public ::testing::TestWithParam<LoraCase> {};

TEST_P(LoraParity, TrainsTheAdaptersAndNothingElse) {
  const auto& [model, strategy, world, microBatches] = GetParam();
  config::RunConfig config = smallConfig(model, "sgd");
  config.loraRank = 2;
  config.steps = 4;
  config.lr = 2.0;  // A moves only once B has: enough steps and rate that every adapter visibly does
  static std::map<std::string, ReferenceResult> references;
  if (!references.count(model)) references[model] = trainSingleProcess(config);
  const auto& ref = references[model];
  const auto dir = testing::freshTempDir("lora_" + model + "_" + strategy + "_" + std::to_string(world) + "_" +
                                         std::to_string(microBatches));
  auto [initial, trained] =
      runExported(config, strategy, world, dir, {"--lora-rank", "2", "--accumulate", std::to_string(microBatches)});
  ASSERT_FALSE(trained.empty());
  int adapters = 0;
  for (const auto& spec : config::modelLayout(config)) {
    ASSERT_TRUE(trained.count(spec.name)) << spec.name;
    const auto& expected = ref.parameters.at(spec.name);
    if (!spec.trainable) {
      EXPECT_TRUE(trained[spec.name].equal(initial[spec.name])) << spec.name << " is frozen yet changed";
      continue;
    }
    ++adapters;
    EXPECT_LE(relativeDifference(trained[spec.name], expected), 1e-5) << spec.name;
    EXPECT_GT(relativeDifference(initial[spec.name], expected), 1e-4) << spec.name << " did not move";
  }
  EXPECT_EQ(adapters, model == "gpt" ? 8 * config.layers : 2 * config.layers);
  auto losses = loadTensor(dir + "/losses.pt");
  ASSERT_EQ(losses.numel(), config.steps);
  for (int s = 0; s < config.steps; ++s) {
    EXPECT_NEAR(losses[s].item<double>(), ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << s;
  }
}

// Under bf16 a frozen weight is never stepped, so no strategy keeps an fp32 master of it: it is held
// once, in bf16 (the estimator's exact cases check the bytes). It comes back as its initial value
// rounded to bf16, and the adapters train as they do with fp32 masters of the base.
TEST(Lora, Bf16HoldsTheFrozenBaseInBf16Only) {
  config::RunConfig config = smallConfig("gpt", "sgd");
  config.loraRank = 2;
  config.steps = 4;
  config.lr = 2.0;  // as LoraParity: enough that A moves too, once B has
  for (const char* strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
    const auto dir = testing::freshTempDir(std::string("lora_bf16_") + strategy);
    const auto [initial, trained] = runExported(
        config, strategy, 2, dir, {"--lora-rank", "2", "--precision", "bf16", "--summary", dir + "/summary.json"});
    ASSERT_FALSE(trained.empty());
    int64_t frozenElements = 0;
    for (const auto& spec : config::modelLayout(config)) {
      const at::Tensor& before = initial.at(spec.name);
      if (spec.trainable) {
        EXPECT_GT(relativeDifference(before, trained.at(spec.name)), 1e-4) << strategy << " " << spec.name;
        continue;
      }
      frozenElements += spec.numel();
      EXPECT_TRUE(trained.at(spec.name).equal(before.to(at::kBFloat16).to(at::kFloat))) << strategy << " " << spec.name;
    }
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
    const std::string s = strategy;
    const int64_t world = 2;
    for (const auto& rank : summary["ranks"]) {
      const int64_t shard = rank["peak_bytes"]["param_shard"].get<int64_t>();
      // ddp and zero1 replicate the frozen base, the sharded strategies split it: 2 bytes per
      // frozen element held, plus the adapters; an fp32 copy of the base alone would reach 4.
      const int64_t frozenHeld = s == "ddp" || s == "zero1" ? frozenElements : frozenElements / world;
      EXPECT_LT(shard, 4 * frozenHeld) << strategy << " rank " << rank["rank"];
      EXPECT_GE(shard, 2 * frozenHeld) << strategy << " rank " << rank["rank"];
    }
  }
}

// Activation checkpointing runs each block's forward again, with a graph, just before its backward:
// the same operations on the same values, so training is bit-identical, in every strategy, with
// LoRA (whose frozen embedding gives the first block an input that needs no gradient) too. The
// price is compute; the gain is the activation peak, each block keeping only its input.
TEST(ActivationCheckpointing, TrainsBitIdenticallyWithLessActivationMemory) {
  config::RunConfig config = smallConfig("gpt");
  config.seq = 24;    // activations well above the parameters
  config.layers = 4;  // each block more adds ~115 KB of activations without, 7 KB (its input) with
  for (const int loraRank : {0, 2}) {
    for (const char* strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
      const std::string name = std::string(strategy) + "_lora" + std::to_string(loraRank);
      std::map<std::string, ExportedRun> runs;
      std::map<std::string, at::Tensor> losses;
      std::map<std::string, int64_t> activationPeak;
      for (const std::string mode : {"off", "blocks"}) {
        const auto dir = testing::freshTempDir("checkpoint_" + name + "_" + mode);
        runs[mode] = runExported(config, strategy, 2, dir,
                                 {"--lora-rank", std::to_string(loraRank), "--activation-checkpointing", mode,
                                  "--summary", dir + "/summary.json"});
        ASSERT_FALSE(runs[mode].trained.empty()) << name << " " << mode;
        losses[mode] = loadTensor(dir + "/losses.pt");
        const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
        for (const auto& rank : summary["ranks"]) {
          activationPeak[mode] = std::max(activationPeak[mode], rank["peak_bytes"]["activation"].get<int64_t>());
          // The price: the blocks' forwards run again, and the summary times them.
          const double recompute = rank["recompute_s_per_step"].get<double>();
          if (mode == "off")
            EXPECT_EQ(recompute, 0.0) << name;
          else
            EXPECT_GT(recompute, 0.0) << name;
        }
      }
      EXPECT_TRUE(losses["blocks"].equal(losses["off"])) << name;
      for (const auto& [param, value] : runs["off"].trained) {
        EXPECT_TRUE(runs["blocks"].trained.at(param).equal(value)) << name << " " << param;
      }
      EXPECT_LT(activationPeak["blocks"] * 2, activationPeak["off"])
          << name << ": off " << activationPeak["off"] << " B, blocks " << activationPeak["blocks"] << " B";
    }
  }
}

// One seed, one base model: the adapters draw from a generator of their own, so a LoRA run starts
// from exactly the weights a full fine-tuning run at the same seed starts from (and B from zero).
TEST(Lora, OneSeedGivesTheSameBaseModelWithOrWithoutAdapters) {
  for (const char* modelName : {"mlp", "gpt"}) {
    config::RunConfig full = smallConfig(modelName);
    config::RunConfig lora = full;
    lora.loraRank = 2;
    std::map<std::string, at::Tensor> base, adapted;
    auto fullModel = makeModel(full);
    fullModel->forEachInitialParameter(full.seed,
                                       [&](size_t i, at::Tensor t) { base[fullModel->params()[i].name] = t; });
    auto loraModel = makeModel(lora);
    loraModel->forEachInitialParameter(lora.seed,
                                       [&](size_t i, at::Tensor t) { adapted[loraModel->params()[i].name] = t; });
    for (const auto& [name, value] : base) {
      ASSERT_TRUE(adapted.count(name)) << name;
      EXPECT_TRUE(adapted[name].equal(value)) << modelName << " " << name << " differs under LoRA";
    }
    for (const auto& [name, value] : adapted) {
      if (isLoraB(name)) EXPECT_EQ(value.abs().max().item<double>(), 0.0) << name;
      if (isLoraA(name)) EXPECT_GT(value.abs().max().item<double>(), 0.0) << name;
    }
    EXPECT_GT(adapted.size(), base.size());
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, LoraParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"),
                                            ::testing::Values("ddp", "zero1", "full_shard", "shard_grad_op"),
                                            ::testing::Values(3), ::testing::Values(1)),
                         [](const ::testing::TestParamInfo<LoraCase>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_world" +
                                  std::to_string(std::get<2>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(
    WithAccumulation, LoraParity,
    ::testing::Combine(::testing::Values("gpt"), ::testing::Values("ddp", "zero1", "full_shard", "shard_grad_op"),
                       ::testing::Values(2), ::testing::Values(3)),  // 6 rows per rank, 3 micro-batches
    [](const ::testing::TestParamInfo<LoraCase>& info) { return std::get<1>(info.param) + "_world2_accumulate3"; });

INSTANTIATE_TEST_SUITE_P(OtherOptimizers, StrategyParity,
                         ::testing::Combine(::testing::Values("mlp", "gpt"), ::testing::Values("ddp", "full_shard"),
                                            ::testing::Values(3), ::testing::Values("sgd", "adamw")),
                         caseName);

}  // namespace
}  // namespace shardscope::engine
