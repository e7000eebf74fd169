#include "config/strategies.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace shardscope::config {

const std::vector<StrategyTraits>& strategyTable() {
  //  kind, name, PyTorch, ZeRO, shards: optimizer, gradients, parameters; gathers units,
  //  reshards after forward, buckets, replicates shard groups, compared by default, collectives,
  //  what a GPU holds (the estimator's line), baseline
  static const std::vector<StrategyTraits> table = {
      {StrategyKind::Ddp, "ddp", "DistributedDataParallel", "ZeRO-0", false, false, false, false, false, true, false,
       true, "an all-reduce per gradient bucket", "W + G + O on every GPU, whatever N", true},
      {StrategyKind::NoShard, "no_shard", "FSDP1 NO_SHARD", "ZeRO-0", false, false, false, false, false, false, false,
       false, "an all-reduce per unit, once its backward is done",
       "W + G + O on every GPU, whatever N: FSDP's units with nothing divided", false},
      {StrategyKind::Zero1, "zero1", "DDP + ZeroRedundancyOptimizer", "ZeRO-1", true, false, false, false, false, true,
       false, false, "an all-reduce per gradient bucket, then an all-gather of the updated parameters",
       "W + G + O/N: only the optimizer state is divided", false},
      {StrategyKind::ShardGradOp, "shard_grad_op", "SHARD_GRAD_OP", "ZeRO-2", true, true, true, true, false, false,
       false, true, "an all-gather per unit before forward, a reduce-scatter per unit after backward",
       "(W + G + O)/N + W: its weight shard, and every unit gathered from forward to backward", false},
      {StrategyKind::FullShard, "full_shard", "FULL_SHARD", "ZeRO-3", true, true, true, true, true, false, false, true,
       "an all-gather per unit before forward and again before backward, a reduce-scatter per unit "
       "after backward",
       "(W + G + O)/N, plus the one or two units being gathered (left out, as the seeds do)", false},
      {StrategyKind::HybridShardZero2, "hybrid_shard_zero2", "_HYBRID_SHARD_ZERO2", "ZeRO-2 per group", true, true,
       true, true, false, false, true, false,
       "within the shard group: an all-gather per unit before forward and a reduce-scatter per unit after "
       "backward; across the groups: an all-reduce of each unit's gradient shard",
       "(W + G + O)/S + W: shard_grad_op within each shard group of S GPUs, whatever N", false},
      {StrategyKind::HybridShard, "hybrid_shard", "HYBRID_SHARD", "ZeRO-3 per group", true, true, true, true, true,
       false, true, false,
       "within the shard group: an all-gather per unit before forward and again before backward, a "
       "reduce-scatter per unit after backward; across the groups: an all-reduce of each unit's gradient "
       "shard",
       "(W + G + O)/S: full_shard within each shard group of S GPUs (--shard-group-size), whatever N", false},
  };
  return table;
}

const StrategyTraits& traitsOf(StrategyKind kind) {
  for (const auto& row : strategyTable()) {
    if (row.kind == kind) return row;
  }
  throw std::logic_error("a StrategyKind without a row in strategyTable()");
}

const StrategyTraits& baselineStrategy() {
  for (const auto& row : strategyTable()) {
    if (row.baseline) return row;
  }
  throw std::logic_error("no row of strategyTable() is the baseline");
}

int unitGathersPerStep(const StrategyTraits& traits) {
  if (!traits.gathersUnits) return 0;
  return traits.reshardsAfterForward ? 2 : 1;
}

StrategyKind strategyWithUnitGathers(int gathers) {
  for (const auto& row : strategyTable()) {
    if (!row.replicatesShardGroups && unitGathersPerStep(row) == std::min(gathers, 2)) return row.kind;
  }
  return baselineStrategy().kind;
}

const std::vector<ModeName<StrategyKind>>& modeNames(StrategyKind) {
  static const std::vector<ModeName<StrategyKind>> names = [] {
    std::vector<ModeName<StrategyKind>> n;
    for (const auto& row : strategyTable()) n.push_back({row.kind, row.name});
    return n;
  }();
  return names;
}

const char* modeOption(StrategyKind) { return "strategy"; }

std::string zeroName(StrategyKind kind) {
  return std::string(traitsOf(kind).pytorch) + ", " + traitsOf(kind).zeroStage;
}

std::string strategyTitle(StrategyKind kind) { return std::string(strategyName(kind)) + " (" + zeroName(kind) + ")"; }

std::vector<StrategyKind> defaultCompareStrategies() {
  // ddp first (the baseline), then the sharded ones from the most sharded down: the order compare
  // runs them in and its tables list them in.
  std::vector<StrategyKind> kinds;
  for (const auto& row : strategyTable()) {
    if (row.comparedByDefault && !row.shardsOptimizer) kinds.push_back(row.kind);
  }
  for (auto row = strategyTable().rbegin(); row != strategyTable().rend(); ++row) {
    if (row->comparedByDefault && row->shardsOptimizer) kinds.push_back(row->kind);
  }
  return kinds;
}

std::optional<std::string> parseStrategyList(const std::string& text, std::vector<StrategyKind>& out) {
  return parseModeList(text, "--strategies", "strategy", out);
}

}  // namespace shardscope::config
