#include "estimate/run_prediction.h"

#include <algorithm>

#include "trace/model_layout.h"

namespace shardscope::estimate {

using trace::CollectiveOp;
using trace::MemoryRole;

int64_t RunPrediction::modelStateBytes() const {
  int64_t total = 0;
  for (const auto& m : memory) total += m.bytes;
  return total;
}

const PredictedMemory* RunPrediction::find(MemoryRole role) const {
  for (const auto& m : memory) {
    if (m.role == role) return &m;
  }
  return nullptr;
}

const PredictedCollective* RunPrediction::find(CollectiveOp op) const {
  for (const auto& c : perStep) {
    if (c.op == op) return &c;
  }
  return nullptr;
}

namespace {

// Adam and AdamW keep two moments per parameter (exp_avg, exp_avg_sq); plain SGD keeps nothing.
int optimizerStatesPerParameter(const std::string& optimizer) { return optimizer == "sgd" ? 0 : 2; }

std::string optimizerFormula(const std::string& optimizer, const std::string& of) {
  if (optimizer == "sgd") return "none: plain SGD keeps no state";
  return "2 moments x 4 B x " + of;
}

RunPrediction predictDdp(const RunConfig& c, int64_t params) {
  const bool bf16 = c.precision == "bf16";
  const int k = optimizerStatesPerParameter(c.optimizer);
  RunPrediction p;
  p.parameters = params;
  p.paddedParameters = params;
  p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * params, "4 B x P: every rank a full fp32 replica"});
  if (bf16) {
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, 2 * params, "2 B x P: the bf16 copy the model computes with"});
  }
  p.memory.push_back({MemoryRole::GradFull, When::Peak, 4 * params, "4 B x P: fp32 gradients after the all-reduce"});
  p.memory.push_back({MemoryRole::OptimizerState, When::AfterStep, 4 * k * params,
                      optimizerFormula(c.optimizer, "P")});
  p.perStep.push_back({CollectiveOp::AllReduce, -1, 4 * params,
                       "every fp32 gradient once, in --bucket-cap-mb buckets"});
  return p;
}

RunPrediction predictZero1(const RunConfig& c, int64_t params) {
  const bool bf16 = c.precision == "bf16";
  const int64_t computeBytes = bf16 ? 2 : 4;
  const int k = optimizerStatesPerParameter(c.optimizer);
  const int64_t padded = (params + c.world - 1) / c.world * c.world;  // one flat buffer
  const int64_t owned = padded / c.world;
  RunPrediction p;
  p.parameters = params;
  p.paddedParameters = padded;
  if (bf16) {
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * owned, "4 B x P''/N: fp32 master weights of this rank's slice"});
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, 2 * padded, "2 B x P'': the bf16 parameters, refilled by all-gather"});
  } else {
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * padded, "4 B x P'': every rank a full fp32 replica (one flat buffer)"});
  }
  p.memory.push_back({MemoryRole::GradFull, When::Peak, computeBytes * params,
                      std::string(bf16 ? "2 B" : "4 B") + " x P: every gradient, until the all-reduce has averaged it"});
  p.memory.push_back({MemoryRole::GradShard, When::Peak, 4 * owned, "4 B x P''/N: the averaged gradient of this rank's slice"});
  p.memory.push_back({MemoryRole::OptimizerState, When::AfterStep, 4 * k * owned, optimizerFormula(c.optimizer, "P''/N")});
  p.perStep.push_back({CollectiveOp::AllReduce, -1, 4 * params, "every fp32 gradient once, in --bucket-cap-mb buckets"});
  p.perStep.push_back({CollectiveOp::AllGather, 1, computeBytes * padded, "the updated slices, once after the step"});
  return p;
}

RunPrediction predictSharded(const RunConfig& c, const std::vector<int64_t>& units) {
  const bool bf16 = c.precision == "bf16";
  const int64_t computeBytes = bf16 ? 2 : 4;
  const int k = optimizerStatesPerParameter(c.optimizer);
  const int64_t n = c.world;
  const int layers = static_cast<int>(units.size()) - 1;  // the root unit is last
  auto padded = [n](int64_t e) { return (e + n - 1) / n * n; };
  int64_t params = 0, paddedTotal = 0, paddedBlocks = 0, largestBlock = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    params += units[u];
    paddedTotal += padded(units[u]);
    if (static_cast<int>(u) < layers) {
      paddedBlocks += padded(units[u]);
      largestBlock = std::max(largestBlock, padded(units[u]));
    }
  }
  const int64_t paddedRoot = padded(units.back());
  const int64_t owned = paddedTotal / n;
  const std::string dtype = bf16 ? "2 B (bf16)" : "4 B";

  RunPrediction p;
  p.parameters = params;
  p.paddedParameters = paddedTotal;
  p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * owned, "4 B x P'/N: this rank's fp32 slice of every unit"});
  if (c.strategy == "full_shard") {
    // The root stays gathered from forward start to the end of its backward; blocks come and go,
    // the one computing plus --prefetch ahead of it (all blocks are the same size).
    const int window = std::min(layers, 1 + c.prefetch);
    const std::string blocks = std::to_string(window) + " block" + (window == 1 ? "" : "s");
    const std::string why = window < 1 + c.prefetch
                                ? "): every block, as --prefetch " + std::to_string(c.prefetch) + " reaches past the last"
                                : "): the unit computing and --prefetch " + std::to_string(c.prefetch) + " ahead";
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, computeBytes * (paddedRoot + window * largestBlock),
                        dtype + " x (root + " + blocks + why});
  } else {
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, computeBytes * paddedTotal,
                        dtype + " x P': every unit stays gathered from its forward to its backward"});
  }
  p.memory.push_back({MemoryRole::GradShard, When::Peak, 4 * owned, "4 B x P'/N: this rank's slice of the reduced gradients"});
  p.memory.push_back({MemoryRole::OptimizerState, When::AfterStep, 4 * k * owned, optimizerFormula(c.optimizer, "P'/N")});

  if (c.strategy == "full_shard") {
    p.perStep.push_back({CollectiveOp::AllGather, 1 + 2 * layers, computeBytes * (paddedRoot + 2 * paddedBlocks),
                         "root once, every block twice (forward and backward)"});
  } else {
    p.perStep.push_back({CollectiveOp::AllGather, layers + 1, computeBytes * paddedTotal,
                         "every unit once: kept from forward to backward"});
  }
  p.perStep.push_back({CollectiveOp::ReduceScatter, layers + 1, 4 * paddedTotal,
                       "every unit's fp32 gradients once"});
  return p;
}

}  // namespace

RunPrediction predictRun(const RunConfig& config) {
  const auto units = unitElements(config);
  if (config.strategy == "ddp" || config.strategy == "zero1") {
    int64_t params = 0;
    for (auto e : units) params += e;
    return config.strategy == "ddp" ? predictDdp(config, params) : predictZero1(config, params);
  }
  return predictSharded(config, units);
}

bool samePrediction(const RunConfig& a, const RunConfig& b) {
  return a.model == b.model && a.layers == b.layers && a.hidden == b.hidden && a.world == b.world &&
         a.precision == b.precision && a.prefetch == b.prefetch && a.optimizer == b.optimizer &&
         (a.model == "gpt" ? a.seq == b.seq && a.vocab == b.vocab
                           : a.features == b.features && a.classes == b.classes);
}

}  // namespace shardscope::estimate
