// Entry point of one rank process (`shardscope worker`): rendezvous, build the model and strategy,
// train, report each step, write this rank's share of the exports.
#pragma once

#include <string>

#include "config/run_config.h"

namespace shardscope {

// Returns the process exit status: 0 when every step ran, 1 after reporting an error. With no
// controller (torchrun, srun) and a `traceDir`, the rank records into DIR/rank-R.events, and rank
// 0 writes the run's configuration beside it (trace/rank_event_files.h).
int runRankWorker(const RunConfig& config, const std::string& traceDir = "");

}  // namespace shardscope
