// The one table of training strategies: what each shards, what PyTorch and the ZeRO paper call it,
// which collectives it runs. The CLI, config, app, estimator, engine and docs read it; adding a
// strategy adds a row here (and an enumerator in config/modes.h) plus the strategy's own files.
#pragma once

#include <string>
#include <vector>

#include "config/modes.h"

namespace shardscope::config {

struct StrategyTraits {
  StrategyKind kind;
  const char* name;             // the CLI and config value, e.g. "full_shard"
  const char* pytorch;          // what PyTorch calls it, e.g. "FSDP2 fully_shard (FSDP1 FULL_SHARD)"
  const char* zeroStage;        // the ZeRO paper's stage, e.g. "ZeRO-3"
  bool shardsOptimizer;         // each rank keeps 1/N of the optimizer state
  bool shardsGradients;         // each rank keeps 1/N of the reduced gradients
  bool shardsParameters;        // each rank keeps 1/N of the parameters between uses
  bool gathersUnits;            // all-gathers each unit's parameters before it computes (FSDP)
  bool reshardsAfterForward;    // frees a unit's gathered parameters after its forward (FSDP2's
                                // reshard_after_forward); otherwise they stay until its backward
  bool reducesInBuckets;        // gradients reduced in DDP's buckets (bucket_cap_mb)
  bool replicatesShardGroups;   // HSDP: sharded only within groups of --shard-group-size ranks, each
                                // group a replica of the others (FSDP2's 2-D mesh (replicate, shard));
                                // gradient shards are then all-reduced across the groups
  bool comparedByDefault;       // `compare` runs it unless --strategies says otherwise
  const char* collectives;      // what crosses the wire each step
  const char* modelStateHolds;  // the estimator's line: what a GPU holds, e.g. "W + G + O/N: ..."
  bool baseline;                // what the others are measured against ("0.50x ddp"): one row has it
};

// Every strategy, in the order of what they shard (ddp, zero1, shard_grad_op, full_shard), then the
// hybrid ones (hybrid_shard_zero2, hybrid_shard).
const std::vector<StrategyTraits>& strategyTable();
const StrategyTraits& traitsOf(StrategyKind kind);
inline const char* strategyName(StrategyKind kind) { return traitsOf(kind).name; }

// The row the others are measured against (ddp): a comparison's "x ddp" columns use its run.
const StrategyTraits& baselineStrategy();

// How often a step all-gathers each unit: 0 (parameters whole: ddp, zero1), 1 (gathered for
// forward and kept through backward: shard_grad_op), 2 (gathered again for backward: full_shard).
// What a profiler trace's collectives show of a strategy.
int unitGathersPerStep(const StrategyTraits& traits);

// The first row of the table, not hybrid, that all-gathers each unit `gathers` times a step (2 for
// more than 2): the strategy a job's trace is read as.
StrategyKind strategyWithUnitGathers(int gathers);

// "NO_SHARD, ZeRO-0": PyTorch's name and the ZeRO stage, for headers and tables.
std::string zeroName(StrategyKind kind);

// "ddp (NO_SHARD, ZeRO-0)": a session's title.
std::string strategyTitle(StrategyKind kind);

// What `compare` runs unless told otherwise: ddp, full_shard, shard_grad_op.
std::vector<StrategyKind> defaultCompareStrategies();

// "ddp,zero1,full_shard" into `out` (duplicates dropped, order kept); an error naming the bad entry
// and the choices otherwise.
std::optional<std::string> parseStrategyList(const std::string& text, std::vector<StrategyKind>& out);

}  // namespace shardscope::config
