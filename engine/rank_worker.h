// Entry point of one rank process (`shardscope worker`): rendezvous, build the model and strategy,
// train, report each step, write this rank's share of the exports.
#pragma once

#include "config/run_config.h"

namespace shardscope {

// Returns the process exit status: 0 when every step ran, 1 after reporting an error.
int runRankWorker(const RunConfig& config);

}  // namespace shardscope
