// Entry point of one rank process (`shardscope worker`): rendezvous, build the model and strategy,
// train, report each step, write this rank's share of the exports.
#pragma once

#include <string>

#include "config/run_config.h"

namespace shardscope::engine {

// Where a rank with no controller (under torchrun, srun) records: into DIR/rank-R.events, rank 0's
// configuration beside it (trace/rank_event_files.h); and/or to a collector at HOST:PORT
// (`shardscope listen`), falling back to DIR when the collector cannot be reached or is lost.
struct WorkerRecording {
  std::string traceDir;
  std::string collectorHost;
  int collectorPort = 0;  // 0: no collector
  std::string token;      // presented to the collector (SHARDSCOPE_COLLECTOR_TOKEN)
  // A job recording itself measures each rank's clock against rank 0's when its ranks are up, at
  // the end, and again between steps every this many seconds (0: only those two).
  double clockEverySeconds = 60;
};

// Returns the process exit status: 0 when every step ran, 1 after reporting an error.
int runRankWorker(const config::RunConfig& config, const WorkerRecording& recording = {});

}  // namespace shardscope::engine
