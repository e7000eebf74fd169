// The estimator's closed forms against what real runs measure: each predicted role's bytes equal
// the recorded peak (or what stays after a step), and each collective's bytes per step equal the
// recorded ones, for every strategy in fp32 and bf16 and at several prefetch depths. Runs the real
// binary, two rank processes each.
#include "estimate/run_prediction.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "estimate/activation_memory.h"
#include "tests/support/run_cli.h"
#include "config/model_layout.h"
#include "config/strategies.h"
#include "trace/ring_schedule.h"
#include "tests/support/mode_of.h"

namespace shardscope::estimate {
namespace {

// GPT's own count: 12 h^2 + 10 h per block (no qkv bias), token and position embeddings, the final
// LayerNorm and an untied LM head. The layout the engine trains must add up to it.
TEST(ModelLayout, GptCountsAsTheTextbookFormula) {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.layers = 5;
  c.hidden = 48;
  c.vocab = 101;
  c.seq = 17;
  const int64_t h = 48, l = 5, v = 101, t = 17;
  int64_t total = 0;
  for (const auto& p : config::modelLayout(c)) total += p.numel();
  EXPECT_EQ(total, l * (12 * h * h + 10 * h) + 2 * v * h + t * h + 2 * h);
  EXPECT_EQ(predictRun(c).parameters, total);
}

// The summary of a run of `c` (the real binary), which must succeed.
nlohmann::json summaryOfRun(const config::RunConfig& c, const std::string& name) {
  const auto dir = testing::freshTempDir(name);
  const auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  if (r.exitCode != 0) return nlohmann::json::object({{"ranks", nlohmann::json::array()}});
  return nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
}

struct Case {
  std::string strategy, precision;
  int prefetch = 1;
  std::string optimizer = "adam";
  int world = 2;  // 3 pads every unit (and zero1's flat buffer) to a multiple of N
  int loraRank = 0;
  int accumulate = 1;
};

std::string nameOf(const ::testing::TestParamInfo<Case>& info) {
  const auto& c = info.param;
  return c.strategy + "_" + c.precision + "_prefetch" + std::to_string(c.prefetch) + "_" + c.optimizer + "_world" +
         std::to_string(c.world) + (c.loraRank > 0 ? "_lora" + std::to_string(c.loraRank) : "") +
         (c.accumulate > 1 ? "_accumulate" + std::to_string(c.accumulate) : "");
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.strategy << " " << c.precision << " prefetch " << c.prefetch << " " << c.optimizer << " world " << c.world
      << " lora rank " << c.loraRank << " accumulate " << c.accumulate;
}

class PredictionMatchesMeasurement : public ::testing::TestWithParam<Case> {};

TEST_P(PredictionMatchesMeasurement, MemoryAndWire) {
  const Case& k = GetParam();
  config::RunConfig c = testing::tinyGptConfig();
  c.world = k.world;
  c.batch = 2 * k.world;
  c.strategy = testing::modeOf<config::StrategyKind>(k.strategy);
  c.precision = testing::modeOf<config::Precision>(k.precision);
  c.prefetch = k.prefetch;
  c.optimizer = testing::modeOf<config::OptimizerKind>(k.optimizer);
  c.loraRank = k.loraRank;
  c.accumulate = k.accumulate;
  c.batch *= k.accumulate;  // every micro-batch keeps a rank's 2 samples
  const auto dir = testing::freshTempDir("prediction_" + nameOf({k, 0}));
  const auto r = testing::runShardscope(testing::runArgsOf(c, {"--summary", dir + "/summary.json"}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  const auto prediction = predictRun(c);
  EXPECT_EQ(summary["parameter_count"].get<int64_t>(), prediction.parameters);
  if (k.world == 3 && config::traitsOf(c.strategy).shardsOptimizer &&
      k.loraRank == 0) {  // (3 layers' adapters divide by 3)
    EXPECT_GT(prediction.paddedParameters, prediction.parameters) << "padding is exercised";
  }
  ASSERT_FALSE(prediction.memory.empty());
  for (const auto& rank : summary["ranks"]) {
    for (const auto& m : prediction.memory) {
      const char* role = trace::memoryRoleName(m.role);
      const char* key = m.when == When::Peak ? "peak_bytes" : "after_step_bytes";
      EXPECT_EQ(rank[key][role].get<int64_t>(), m.bytes)
          << "rank " << rank["rank"] << " " << key << " " << role << ": " << m.formula;
    }
    // What forward saved for backward, counted tensor by tensor (the loss of an earlier
    // micro-batch, a 4-byte scalar, may still be held under accumulation).
    EXPECT_NEAR(static_cast<double>(rank["activation_saved_bytes"].get<int64_t>()),
                static_cast<double>(prediction.activationSavedBytes), k.accumulate > 1 ? 4.0 : 0.0)
        << prediction.activationFormula;
    const auto& measured = rank["collectives"];
    for (const auto& p : prediction.perStep) {
      const auto& op = measured[trace::collectiveOpName(p.op)];
      // Every step also all-reduces the 4-byte fp32 loss for the progress line.
      const bool isAllReduce = p.op == trace::CollectiveOp::AllReduce;
      EXPECT_EQ(op["bytes"].get<int64_t>() / c.steps, p.bytes + (isAllReduce ? 4 : 0))
          << trace::collectiveOpName(p.op) << ": " << p.formula;
      if (p.count >= 0) {
        EXPECT_EQ(op["count"].get<int64_t>() / c.steps, p.count + (isAllReduce ? 1 : 0))
            << trace::collectiveOpName(p.op);
      }
      // What the rank sent under the ring: summed per collective, so rounding to whole bytes may
      // differ from the prediction's (one rounding of the total) by up to a byte per collective.
      const int64_t lossSent = isAllReduce ? trace::ringTrafficPerRank(p.op, c.world, 4).sentBytes : 0;
      EXPECT_NEAR(static_cast<double>(op["sent_bytes"].get<int64_t>() / c.steps),
                  static_cast<double>(p.sentBytes + lossSent),
                  static_cast<double>(op["count"].get<int64_t>() / c.steps + 1))
          << trace::collectiveOpName(p.op);
      EXPECT_EQ(op["received_bytes"], op["sent_bytes"]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Estimator, PredictionMatchesMeasurement,
    ::testing::Values(
        Case{"ddp", "fp32"}, Case{"ddp", "bf16"}, Case{"ddp", "fp32", 1, "sgd"}, Case{"zero1", "fp32"},
        Case{"zero1", "bf16"}, Case{"zero1", "fp32", 1, "adamw"}, Case{"full_shard", "fp32"},
        Case{"full_shard", "bf16"}, Case{"full_shard", "fp32", 0}, Case{"full_shard", "fp32", 2},
        Case{"full_shard", "fp32", 4, "adamw"}, Case{"shard_grad_op", "fp32"}, Case{"shard_grad_op", "bf16"},
        Case{"ddp", "fp32", 1, "adam", 3}, Case{"zero1", "fp32", 1, "adam", 3}, Case{"zero1", "bf16", 1, "adam", 3},
        Case{"full_shard", "fp32", 1, "adam", 3}, Case{"full_shard", "bf16", 2, "adam", 3},
        Case{"shard_grad_op", "fp32", 1, "adam", 3},
        // no_shard: ddp's memory, an all-reduce per trained unit.
        Case{"no_shard", "fp32"}, Case{"no_shard", "bf16", 1, "adam", 3}, Case{"no_shard", "fp32", 1, "adam", 2, 3},
        // LoRA: frozen weights (padded at world 3), trained adapters.
        Case{"ddp", "fp32", 1, "adam", 2, 3}, Case{"ddp", "bf16", 1, "adam", 3, 3},
        Case{"zero1", "fp32", 1, "adam", 3, 3}, Case{"zero1", "bf16", 1, "adam", 3, 3},
        Case{"full_shard", "fp32", 1, "adam", 3, 3}, Case{"full_shard", "bf16", 2, "adam", 2, 3},
        Case{"shard_grad_op", "fp32", 1, "adam", 3, 3}, Case{"shard_grad_op", "bf16", 1, "adam", 2, 3},
        // Gradient accumulation: gathers per micro-batch, reductions per step.
        Case{"ddp", "fp32", 1, "adam", 2, 0, 2}, Case{"zero1", "bf16", 1, "adam", 3, 0, 2},
        Case{"full_shard", "fp32", 1, "adam", 3, 0, 3}, Case{"shard_grad_op", "bf16", 1, "adam", 2, 0, 2},
        Case{"full_shard", "bf16", 2, "adam", 2, 3, 2}, Case{"shard_grad_op", "fp32", 1, "adam", 3, 3, 2},
        // HSDP: world 4 in shard groups of 2, world 6 in groups of 3 (the default split).
        Case{"hybrid_shard", "fp32", 1, "adam", 4}, Case{"hybrid_shard", "bf16", 1, "adam", 6},
        Case{"hybrid_shard_zero2", "fp32", 1, "adam", 4}, Case{"hybrid_shard_zero2", "fp32", 1, "adam", 6, 3, 2}),
    nameOf);

// Activation checkpointing keeps only each block's output; the prediction follows it there too, in
// both precisions, with and without LoRA, and at a shape where activations outweigh the weights.
// --offload cpu moves the sharded strategies' shards, gradient shards and optimizer state to the
// host: the same bytes, counted on the host and not in the device's sum; the gathered units stay.
// ddp and zero1 have no shards to offload and are predicted as without it.
TEST(OffloadPrediction, ShardsGradientsAndOptimizerStateMoveToTheHost) {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.world = 4;
  c.device = config::DeviceKind::Cuda;
  for (config::StrategyKind strategy : config::allModes<config::StrategyKind>()) {
    SCOPED_TRACE(config::strategyName(strategy));
    c.strategy = strategy;
    c.offload = config::Offload::Off;
    const RunPrediction plain = predictRun(c);
    c.offload = config::Offload::Cpu;
    const RunPrediction moved = predictRun(c);
    // full_shard and shard_grad_op: their passing copies on the device come after (below).
    const bool copies =
        config::traitsOf(strategy).shardsParameters && !config::traitsOf(strategy).replicatesShardGroups;
    ASSERT_EQ(moved.memory.size(), plain.memory.size() + (copies ? 2 : 0));
    int64_t movedBytes = 0;
    for (size_t i = 0; i < plain.memory.size(); ++i) {
      const auto& m = moved.memory[i];
      EXPECT_EQ(m.bytes, plain.memory[i].bytes) << trace::memoryRoleName(m.role);
      const bool state = m.role == trace::MemoryRole::ParamShard || m.role == trace::MemoryRole::GradShard ||
                         m.role == trace::MemoryRole::OptimizerState;
      EXPECT_EQ(m.host, state && config::traitsOf(strategy).shardsParameters) << trace::memoryRoleName(m.role);
      movedBytes += m.host ? m.bytes : 0;
    }
    EXPECT_EQ(moved.hostBytes(), movedBytes);
    int64_t copied = 0;
    for (size_t i = plain.memory.size(); i < moved.memory.size(); ++i) {
      EXPECT_FALSE(moved.memory[i].host);
      copied += moved.memory[i].bytes;
    }
    EXPECT_EQ(moved.modelStateBytes() + moved.hostBytes(), plain.modelStateBytes() + copied);
    if (copies) EXPECT_LT(copied, moved.hostBytes()) << "a unit's copies, not the whole";
    EXPECT_EQ(movedBytes > 0, config::traitsOf(strategy).shardsParameters);
  }
}

// What the device still holds under --offload cpu, against what runs on an H200 measured
// (docs/results, full_shard): bf16 at --prefetch 1, the 1B model at world 1 and 8 blocks of hidden
// 1024 at world 2, where the root (the embeddings and the head) is the largest unit and its fp32
// shard and its gradient shard are the device's param_shard and grad_shard peaks; fp32 on the
// second model at --prefetch 1 and 2, where param_shard is the root's, then two blocks' at once.
// Byte for byte.
TEST(OffloadPrediction, TheDevicesPassingCopiesAreWhatTheGpuRunsMeasured) {
  for (const char* file :
       {"gpu_1b_offload_summary_h200.json", "gpu_offload_world2_summary_h200.json",
        "gpu_offload_fp32_prefetch1_summary_h200.json", "gpu_offload_fp32_prefetch2_summary_h200.json"}) {
    SCOPED_TRACE(file);
    const auto summary = nlohmann::json::parse(std::ifstream(std::string(SHARDSCOPE_RESULTS_DIR) + "/" + file));
    config::RunConfig c;
    ASSERT_FALSE(config::applyConfigJson(summary["config"], c).has_value());
    ASSERT_EQ(c.offload, config::Offload::Cpu);
    const RunPrediction p = predictRun(c);
    const auto* shard = p.find(trace::MemoryRole::ParamShard, /*host=*/false);
    const auto* grad = p.find(trace::MemoryRole::GradShard, /*host=*/false);
    ASSERT_TRUE(shard && grad);
    for (const auto& rank : summary["ranks"]) {
      EXPECT_EQ(rank["peak_bytes"]["param_shard"].get<int64_t>(), shard->bytes) << shard->formula;
      EXPECT_EQ(rank["peak_bytes"]["grad_shard"].get<int64_t>(), grad->bytes) << grad->formula;
      EXPECT_EQ(rank["peak_host_bytes"]["param_shard"].get<int64_t>(),
                p.find(trace::MemoryRole::ParamShard, true)->bytes);
    }
  }
}

TEST(ActivationPrediction, SavedForBackwardWithAndWithoutCheckpointing) {
  for (const char* checkpointing : {"off", "blocks"}) {
    for (const char* precision : {"fp32", "bf16"}) {
      for (int lora : {0, 4}) {
        config::RunConfig c = testing::tinyGptConfig();
        c.seq = 48;
        c.activationCheckpointing = testing::modeOf<config::Checkpointing>(checkpointing);
        c.precision = testing::modeOf<config::Precision>(precision);
        c.loraRank = lora;
        c.strategy = config::StrategyKind::FullShard;
        SCOPED_TRACE(std::string(checkpointing) + " " + precision + " lora " + std::to_string(lora));
        const auto summary = summaryOfRun(c, "activations");
        ASSERT_FALSE(summary["ranks"].empty());
        const auto prediction = predictRun(c);
        for (const auto& rank : summary["ranks"]) {
          EXPECT_EQ(rank["activation_saved_bytes"].get<int64_t>(), prediction.activationSavedBytes)
              << prediction.activationFormula;
          // The peak adds backward's working memory: more, never less.
          EXPECT_GT(rank["peak_bytes"]["activation"].get<int64_t>(), prediction.activationSavedBytes);
        }
      }
    }
  }
}

// Under --tp: the model states of a rank's slices, and what the data group and the tensor group
// send, each op's bytes per step as predicted (the data group's and the tensor group's all-reduces
// added up, as the summary counts them), for every 1-D strategy and both models (mlp with an even
// and an odd number of linears), and with recomputed blocks.
TEST(TensorParallelPrediction, MatchesWhatTheRanksHoldAndSend) {
  struct TpCase {
    std::string model, strategy;
    int layers = 3;
    bool checkpointed = false;
    bool sequenceParallel = false;  // all-gathers and reduce-scatters in the tensor group too
    int world = 4;                  // 8: a hybrid strategy's 2 x 2 grid over the 4 data ranks
    int loraRank = 0;               // the adapters split as their base weights, the base frozen
  };
  const TpCase cases[] = {{"gpt", "ddp"},
                          {"gpt", "zero1"},
                          {"gpt", "full_shard"},
                          {"gpt", "shard_grad_op"},
                          {"gpt", "full_shard", 3, true},
                          {"mlp", "ddp", 2},
                          {"mlp", "full_shard", 3},
                          {"gpt", "ddp", 2, false, true},
                          {"gpt", "full_shard", 3, false, true},
                          {"gpt", "shard_grad_op", 2, true, true},
                          {"gpt", "hybrid_shard", 2, false, false, 8},
                          {"mlp", "hybrid_shard_zero2", 2, false, false, 8},
                          {"gpt", "full_shard", 2, false, false, 4, 2},
                          {"mlp", "ddp", 2, false, false, 4, 2}};
  for (const auto& k : cases) {
    config::RunConfig c = testing::tinyGptConfig();
    c.model = testing::modeOf<config::ModelKind>(k.model);
    c.layers = k.layers;
    c.world = k.world;
    c.tp = 2;
    c.batch = k.world;
    c.strategy = testing::modeOf<config::StrategyKind>(k.strategy);
    c.activationCheckpointing = k.checkpointed ? config::Checkpointing::Blocks : config::Checkpointing::Off;
    c.sequenceParallel = k.sequenceParallel;
    c.loraRank = k.loraRank;
    SCOPED_TRACE(std::string(k.loraRank ? "lora " : "") + k.model + " " + k.strategy + " world " +
                 std::to_string(k.world) + " layers " + std::to_string(k.layers) + (k.checkpointed ? " ac" : "") +
                 (k.sequenceParallel ? " sp" : ""));
    const auto summary = summaryOfRun(c, "tp_prediction");
    ASSERT_FALSE(summary["ranks"].empty());
    const auto prediction = predictRun(c);
    std::map<std::string, int64_t> bytes, sent;
    for (const auto& p : prediction.perStep) {
      bytes[trace::collectiveOpName(p.op)] += p.bytes;
      sent[trace::collectiveOpName(p.op)] += p.sentBytes;
    }
    ASSERT_GT(bytes["all_reduce"], 0);
    for (const auto& rank : summary["ranks"]) {
      for (const auto& m : prediction.memory) {
        const char* key = m.when == When::Peak ? "peak_bytes" : "after_step_bytes";
        EXPECT_EQ(rank[key][trace::memoryRoleName(m.role)].get<int64_t>(), m.bytes) << m.formula;
      }
      if (c.model == config::ModelKind::Gpt) {
        EXPECT_EQ(rank["activation_saved_bytes"].get<int64_t>(), prediction.activationSavedBytes);
      }
      for (const auto& [op, predicted] : bytes) {
        const int64_t loss = op == "all_reduce" ? 4 : 0;  // the progress line's, over the world
        EXPECT_EQ(rank["collectives"][op]["bytes"].get<int64_t>() / c.steps, predicted + loss) << op;
        const int64_t lossSent =
            loss ? trace::ringTrafficPerRank(trace::CollectiveOp::AllReduce, c.world, 4).sentBytes : 0;
        EXPECT_NEAR(static_cast<double>(rank["collectives"][op]["sent_bytes"].get<int64_t>() / c.steps),
                    static_cast<double>(sent[op] + lossSent), 64.0)
            << op;
      }
    }
  }
}

// Under --tp the activations a rank saves shrink as the count says: the heads' and the MLP's share
// by t, the norms' inputs and the residual stream whole; and a tensor group shares its samples.
// Under --sequence-parallel the rest divides by t too (the residual stream and the norms keep a
// rank's tokens): less than --tp alone saves, measured.
TEST(ActivationPrediction, TensorParallelSplitsTheHeadsAndTheMlpNotTheResidualStream) {
  std::map<int, int64_t> tensorOnly;
  for (auto [tp, sequence] : {std::pair{1, false}, {2, false}, {4, false}, {2, true}, {4, true}}) {
    config::RunConfig c = testing::tinyGptConfig();
    c.world = 4;
    c.batch = 8;
    c.seq = 8;  // a multiple of each tp: --sequence-parallel splits it
    c.tp = tp;
    c.sequenceParallel = sequence;
    c.strategy = config::StrategyKind::FullShard;
    SCOPED_TRACE("tp " + std::to_string(tp) + (sequence ? " sp" : ""));
    const auto summary = summaryOfRun(c, "tp_activations");
    ASSERT_FALSE(summary["ranks"].empty());
    const auto prediction = predictRun(c);
    for (const auto& rank : summary["ranks"]) {
      EXPECT_EQ(rank["activation_saved_bytes"].get<int64_t>(), prediction.activationSavedBytes)
          << prediction.activationFormula;
    }
    if (!sequence) tensorOnly[tp] = prediction.activationSavedBytes;
    if (sequence) EXPECT_LT(prediction.activationSavedBytes, tensorOnly.at(tp));
  }
}

// Korthikanti et al. 2022, Table 2 (t = 1): per layer sbh(34 + 5as/h) bytes, 34 sbh with selective
// recomputation, 2 sbh with full. GPT-3 175B's shape (96 layers, h 12288, 96 heads, s 2048) at
// b = 1: 34 + 5 x 96 x 2048 / 12288 = 114 sbh per layer, 275.4 GB in all without recomputation.
TEST(ActivationPrediction, KorthikantiClosedForms) {
  TransformerShape gpt3{96, 12288, 96, 2048, 1};
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::None), 96 * 114 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Selective), 96 * 34 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Full), 96 * 2 * sbh);
  EXPECT_NEAR(transformerActivationBytes(gpt3, Recompute::None) / 1e9, 275.4, 0.05);
  EXPECT_EQ(transformerActivationFormula(Recompute::None, 2), "sbh(34 + 5as/h)");
}

// The same count with 4-byte values: the 16 sbh and 2 as^2b values double, the 2 sbh and as^2b
// bytes of dropout masks do not: sbh(66 + 9as/h), selective 66 sbh, full 4 sbh. For GPT-3's shape
// 66 + 9 x 16 = 210 sbh per layer.
// Korthikanti et al.'s Table 2 under tensor parallelism t (GPT-3: a = 96, s = 2048, h = 12288, so
// 5as/h = 80): sbh(10 + 24/t + 5as/(ht)) per layer, with sequence parallelism sbh(34/t + 5as/(ht));
// selective 10 + 24/t and 34/t; full 2 and 2/t. And what tensor parallelism sends per micro-batch:
// 4 all-reduces of 2sbh bytes a layer (6 under full recomputation), 2(t-1)/t of each from a GPU.
TEST(ActivationPrediction, TensorAndSequenceParallelismAsKorthikantiTabulates) {
  const TransformerShape gpt3{96, 12288, 96, 2048, 1};
  const double sbh = 2048.0 * 12288;
  const TensorParallel tp{8, false}, sp{8, true};
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::None, 2, tp), 96 * (10 + 3 + 10) * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::None, 2, sp), 96 * (34.0 / 8 + 10) * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Selective, 2, tp), 96 * 13 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Selective, 2, sp), 96 * (34.0 / 8) * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Full, 2, tp), 96 * 2 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Full, 2, sp), 96 * (2.0 / 8) * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::None, 2, {1, false}),
                   transformerActivationBytes(gpt3, Recompute::None))
      << "t = 1 is no tensor parallelism";
  EXPECT_EQ(transformerActivationFormula(Recompute::None, 2, tp), "sbh(10 + 24/t + 5as/(ht))");
  EXPECT_EQ(transformerActivationFormula(Recompute::None, 2, sp), "sbh(34/t + 5as/(ht))");
  const auto traffic = tensorParallelTraffic(gpt3, Recompute::None, 2, tp);
  EXPECT_EQ(traffic.allReduces, 4 * 96);
  EXPECT_DOUBLE_EQ(traffic.sizeBytes, 2 * sbh);
  EXPECT_DOUBLE_EQ(traffic.sentBytes, 4 * 96 * 2.0 * 7 / 8 * 2 * sbh);
  EXPECT_EQ(tensorParallelTraffic(gpt3, Recompute::Full, 2, sp).allReduces, 6 * 96);
}

TEST(ActivationPrediction, Fp32ActivationsDoubleTheValuesNotTheMasks) {
  TransformerShape gpt3{96, 12288, 96, 2048, 1};
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::None, 4), 96 * 210 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Selective, 4), 96 * 66 * sbh);
  EXPECT_DOUBLE_EQ(transformerActivationBytes(gpt3, Recompute::Full, 4), 96 * 4 * sbh);
  EXPECT_EQ(transformerActivationFormula(Recompute::None, 4), "sbh(66 + 9as/h)");
  EXPECT_EQ(parseActivationPrecision("fp32"), 4);
  EXPECT_EQ(parseActivationPrecision("bf16"), 2);
  EXPECT_FALSE(parseActivationPrecision("fp8").has_value());
}

TEST(ActivationPrediction, PresetsAndShapesAreReadAsWritten) {
  const auto llama = parseArchitecture("llama2-70b");
  ASSERT_TRUE(llama.has_value());
  EXPECT_EQ(llama->shape.layers, 80);
  EXPECT_EQ(llama->shape.hidden, 8192);
  EXPECT_FALSE(llama->gptLayer) << "Llama's layer is not the paper's: an approximation";
  // Full recomputation keeps each layer's 16-bit input: 2 x 4096 x 8192 x 80 bytes = 5.37 GB.
  EXPECT_NEAR(transformerActivationBytes(llama->shape, Recompute::Full), 2.0 * 4096 * 8192 * 80, 1.0);
  const auto custom = parseArchitecture("12,768,12,1024");
  ASSERT_TRUE(custom.has_value());
  EXPECT_EQ(custom->shape.seq, 1024);
  EXPECT_EQ(custom->parameters, 0) << "a shape alone has no parameter count";
  for (const char* bad : {"", "llama", "12,768,12", "12,768,12,1024,1", "12,,12,1024", "0,768,12,1024", "a,b,c,d"}) {
    EXPECT_FALSE(parseArchitecture(bad).has_value()) << bad;
  }
  EXPECT_EQ(parseRecompute("selective"), Recompute::Selective);
  EXPECT_FALSE(parseRecompute("blocks").has_value());
}

// The bytes a rank sends per step under the ring schedule, written out per strategy (fp32, so the
// compute copy is 4 B too): ddp all-reduces every gradient, 2(N-1)/N x 4P; zero1 adds one
// all-gather of the flat buffer, (N-1)/N x 4P''; shard_grad_op gathers and reduce-scatters every
// unit once, (N-1)/N x 8P'; full_shard gathers every block a second time for backward.
TEST(TrafficPrediction, ClosedFormsForEveryStrategyAtWorldTwoThreeFour) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE("world " + std::to_string(n));
    config::RunConfig c;
    c.model = config::ModelKind::Gpt;
    c.layers = 4;
    c.hidden = 64;
    c.world = n;
    const auto sent = [&](const char* strategy) {
      config::RunConfig s = c;
      s.strategy = testing::modeOf<config::StrategyKind>(strategy);
      return predictRun(s);
    };
    const auto ddp = sent("ddp"), zero1 = sent("zero1"), sgo = sent("shard_grad_op"), fs = sent("full_shard");
    const int64_t p = ddp.parameters;
    const int64_t flat = (p + n - 1) / n * n;      // P'': zero1's one flat buffer, padded once
    const int64_t perUnit = sgo.paddedParameters;  // P': every unit padded
    int64_t blocks = 0;                            // the blocks' share of P'
    for (const auto& u : config::flatUnits(config::modelLayout(c), c.layers)) {
      if (u.unit != config::kRootUnit) blocks += (u.numel + n - 1) / n * n;
    }
    EXPECT_NEAR(static_cast<double>(ddp.sentBytesPerStep()), 2.0 * (n - 1) / n * 4 * p, 1.0);
    EXPECT_NEAR(static_cast<double>(zero1.sentBytesPerStep()), 2.0 * (n - 1) / n * 4 * p + (n - 1) * 4 * flat / n, 1.0);
    EXPECT_EQ(sgo.sentBytesPerStep(), (n - 1) * 8 * perUnit / n);
    EXPECT_EQ(fs.sentBytesPerStep(), (n - 1) * (8 * perUnit + 4 * blocks) / n);
    EXPECT_EQ(sent("no_shard").sentBytesPerStep(), ddp.sentBytesPerStep()) << "the same gradients, a unit at a time";
    // The ZeRO paper's comparison: ZeRO-2 moves what DDP moves, ZeRO-3 1.5x (less the root, which
    // is gathered once), at any N. Sizes, by contrast, double from ddp to the sharded strategies.
    const double d = static_cast<double>(ddp.sentBytesPerStep());
    EXPECT_NEAR(zero1.sentBytesPerStep() / d, 1.5, 0.01);
    EXPECT_NEAR(sgo.sentBytesPerStep() / d, 1.0, 0.01);
    EXPECT_NEAR(fs.sentBytesPerStep() / d, 1.5 - 0.5 * (perUnit - blocks) / static_cast<double>(p), 0.01);
  }
}

// The same ratios, measured: a compare of the four strategies on the README's model at 2 ranks.
// (Its collectives' sizes read 1 : 2 : 2 : 2.96, what the app once drew as bytes on the wire.)
TEST(TrafficPrediction, ARunSendsWhatTheZeroPaperSays) {
  const auto dir = testing::freshTempDir("traffic");
  const auto r = testing::runShardscope({"compare", "--strategies", "ddp,zero1,shard_grad_op,full_shard", "--model",
                                         "gpt", "--layers", "4", "--hidden", "256", "--seq", "16", "--batch", "4",
                                         "--world", "2", "--steps", "2", "--summary", dir + "/compare.json"});
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/compare.json"));
  const auto perStep = [&](const char* strategy, const char* key) {
    return summary["runs"][strategy]["ranks"][0]["traffic_per_step"][key].get<double>();
  };
  const double ddpSent = perStep("ddp", "sent_bytes"), ddpSize = perStep("ddp", "size_bytes");
  EXPECT_NEAR(perStep("zero1", "sent_bytes") / ddpSent, 1.5, 0.02);
  EXPECT_NEAR(perStep("shard_grad_op", "sent_bytes") / ddpSent, 1.0, 0.02);
  EXPECT_NEAR(perStep("full_shard", "sent_bytes") / ddpSent, 1.48, 0.03);
  EXPECT_NEAR(perStep("shard_grad_op", "size_bytes") / ddpSize, 2.0, 0.03);
  for (const char* s : {"ddp", "zero1", "shard_grad_op", "full_shard"}) {
    EXPECT_EQ(perStep(s, "received_bytes"), perStep(s, "sent_bytes")) << s;
  }
  EXPECT_NE(r.output.find("ratio to ddp"), std::string::npos) << r.output;
}

// LoRA's layout: every base weight frozen, and per block matrix W [out, in] two trained adapters,
// A [r, in] and B [out, r]: for a GPT block r (h + 3h) + r (h + h) + r (h + 4h) + r (4h + h).
TEST(ModelLayout, LoraFreezesTheBaseAndTrainsOnlyTheAdapters) {
  config::RunConfig c;
  c.model = config::ModelKind::Gpt;
  c.layers = 3;
  c.hidden = 16;
  c.loraRank = 2;
  int64_t frozen = 0, trained = 0;
  for (const auto& p : config::modelLayout(c)) {
    const bool adapter = p.name.find(".lora_") != std::string::npos;
    EXPECT_EQ(p.trainable, adapter) << p.name;
    (p.trainable ? trained : frozen) += p.numel();
  }
  const int64_t h = 16, r = 2;
  EXPECT_EQ(trained, 3 * r * (4 * h + 2 * h + 5 * h + 5 * h));
  EXPECT_EQ(config::trainableElements(c), trained);
  config::RunConfig full = c;
  full.loraRank = 0;
  int64_t base = 0;
  for (const auto& p : config::modelLayout(full)) base += p.numel();
  EXPECT_EQ(frozen, base) << "the base model is unchanged, only frozen";
  EXPECT_EQ(config::trainableElements(full), base);
}

}  // namespace
}  // namespace shardscope::estimate
