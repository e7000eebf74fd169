// `shardscope estimate` for a run: what each rank of it will hold and send under each strategy, as
// tables or JSON, every figure a PREDICTION from closed forms and shown with its formula.
#pragma once

#include <cstdio>
#include <vector>

#include "config/run_config.h"
#include "estimate/run_prediction.h"

namespace shardscope::estimate {

// `config`'s run predicted under every strategy, in allModes<StrategyKind>() order (ddp first: the
// traffic ratios are against it). A hybrid strategy's shard group is config's; others have none.
std::vector<RunPrediction> predictEveryStrategy(const config::RunConfig& config);

// Memory per rank by role, the collectives per step, and how each figure comes about.
void printRunPredictions(std::FILE* out, const config::RunConfig& config,
                         const std::vector<RunPrediction>& predictions);

// --json: every strategy's prediction, each figure with its formula (schema shardscope.estimate/1).
void printRunPredictionsJson(std::FILE* out, const config::RunConfig& config,
                             const std::vector<RunPrediction>& predictions);

}  // namespace shardscope::estimate
