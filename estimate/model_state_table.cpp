#include "estimate/model_state_table.h"

#include <algorithm>
#include <cmath>

#include "config/strategies.h"

namespace shardscope::estimate {

const std::vector<ModelStateStrategy>& modelStateStrategies() {
  // What is divided comes from the strategy table; the ZeRO paper's stage 2 goes after ZeRO-1.
  static const std::vector<ModelStateStrategy> table = [] {
    std::vector<ModelStateStrategy> rows;
    for (const auto& s : config::strategyTable()) {
      rows.push_back({s.name, s.modelStateHolds, s.shardsParameters, s.gathersUnits && !s.reshardsAfterForward,
                      s.shardsGradients, s.shardsOptimizer, s.replicatesShardGroups});
      if (s.kind == config::StrategyKind::Zero1) {
        rows.push_back({"deepspeed_zero2",
                        "W + (G + O)/N: the whole low-precision weights on every GPU (ZeRO paper's P_os+g)", false,
                        false, true, true});
      }
    }
    return rows;
  }();
  return table;
}

ModelStateRow modelStateRow(const ModelStateCase& c, const ModelStateStrategy& s, int n) {
  // Tensor parallelism divides every model state first; the strategy divides among the rest.
  const int t = std::max(1, c.tensorParallel.degree);
  const double w = c.parameters * c.bytes.weights / t;
  const double g = c.parameters * c.trainedFraction * c.bytes.grads / t;
  const double o = c.parameters * c.trainedFraction * c.bytes.optimizer / t;
  const int dataParallel = std::max(1, n / t);
  // HSDP divides among its shard group only; fewer GPUs than a group are one group of them all.
  const double d = s.withinShardGroup ? std::min(dataParallel, std::max(1, c.shardGroupSize)) : dataParallel;
  ModelStateRow r;
  r.strategy = s.name;
  r.world = n;
  r.weights = s.weightsDivided ? w / d : w;
  r.gathered = s.keepsGatheredWeights ? w : 0;
  r.grads = s.gradsDivided ? g / d : g;
  r.optimizer = s.optimizerDivided ? o / d : o;
  r.activations = c.activationBytes;
  r.fits = c.gpuMemoryBytes <= 0 || r.total() <= c.budgetBytes();
  return r;
}

namespace {

// Per GPU the model states are kept + divided / N: split a strategy's bytes that way.
struct PerGpuBytes {
  double kept = 0, divided = 0;
};

PerGpuBytes perGpuBytes(const ModelStateCase& c, const ModelStateStrategy& s) {
  const auto atOne = modelStateRow(c, s, 1);
  // Between N = 1 and N = 2 the divided part halves and the kept part stays.
  const double divided = 2.0 * (atOne.total() - modelStateRow(c, s, 2).total());
  return {atOne.total() - divided, divided};
}

}  // namespace

std::vector<ModelStateRow> modelStateTable(const ModelStateCase& c) {
  std::vector<ModelStateRow> rows;
  for (const auto& s : modelStateStrategies()) {
    for (int n : c.worlds) {
      if (n % std::max(1, c.tensorParallel.degree) == 0) rows.push_back(modelStateRow(c, s, n));
    }
  }
  return rows;
}

std::optional<int> fewestGpus(const ModelStateCase& c, const ModelStateStrategy& strategy) {
  const int t = std::max(1, c.tensorParallel.degree);
  if (t > 1) {  // the same question of the data-parallel ranks, each a group of t GPUs
    ModelStateCase perGroup = c;
    perGroup.tensorParallel = {};
    perGroup.parameters = c.parameters / t;
    const auto groups = fewestGpus(perGroup, strategy);
    return groups ? std::optional<int>(*groups * t) : std::nullopt;
  }
  const double budget = c.budgetBytes();
  const auto bytes = perGpuBytes(c, strategy);
  if (bytes.kept + bytes.divided <= budget) return 1;
  if (bytes.kept >= budget || bytes.divided <= 0) return std::nullopt;
  const double n = std::ceil(bytes.divided / (budget - bytes.kept));
  if (n > 1e9) return std::nullopt;
  // Past its shard group HSDP divides no further: what S GPUs cannot hold, no N can.
  if (strategy.withinShardGroup && n > std::max(1, c.shardGroupSize)) return std::nullopt;
  int fewest = static_cast<int>(n);
  // Guard the rounding at the boundary: the answer must fit, and one fewer must not.
  while (modelStateRow(c, strategy, fewest).total() > budget) {
    if (strategy.withinShardGroup && fewest >= std::max(1, c.shardGroupSize)) return std::nullopt;  // S is the limit
    ++fewest;
  }
  while (fewest > 1 && modelStateRow(c, strategy, fewest - 1).total() <= budget) --fewest;
  return fewest;
}

double largestModel(const ModelStateCase& c, const ModelStateStrategy& strategy, int world) {
  ModelStateCase perParameter = c;
  perParameter.parameters = 1;
  perParameter.activationBytes = 0;
  const double bytesPerParameter = modelStateRow(perParameter, strategy, world).total();
  return bytesPerParameter > 0 ? c.budgetBytes() / bytesPerParameter : 0.0;
}

}  // namespace shardscope::estimate
