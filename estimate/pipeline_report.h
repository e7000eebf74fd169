// The estimator's pipeline answers on the terminal (or as JSON): a --pp run's prediction per
// pipeline rank (pipeline_prediction.h), and the (pp, dp, tp) layouts of a number of GPUs.
#pragma once

#include <cstdio>

#include "config/run_config.h"
#include "estimate/model_state_table.h"

namespace shardscope::estimate {

void printPipelinePrediction(std::FILE* out, const config::RunConfig& config, bool json);

// Every layout of `gpus` GPUs for the model of `c` (its parameters, bytes per parameter, the
// activations --arch gives and the GPU's budget), at `microBatches` micro-batches.
void printLayouts(std::FILE* out, const ModelStateCase& c, int gpus, int microBatches, bool json);

}  // namespace shardscope::estimate
