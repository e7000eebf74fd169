// The controller: a run in three parts. Launch (engine/launch/rank_processes.h): one OS process per rank,
// as torchrun starts them, each handed the torchrun variables and a pipe for its events. Observe
// (engine/launch/run_observer.h): follow their progress, and end the run cleanly when any rank fails, dies
// or falls silent: the others are stopped and the error names the rank. Conclude (here): the
// finished steps, the message, and the outputs, written also when the run failed. Never blocks on
// a rank.
#pragma once

#include <optional>
#include <string>

#include "config/run_config.h"
#include "engine/launch/run_types.h"

namespace shardscope::engine {

// Checks what only the running machine can tell (e.g. that --device cuda has a GPU to use).
std::optional<std::string> checkDeviceAvailable(const config::RunConfig& config);

// `workerExecutable` is the shardscope binary to start with `worker --config FILE`.
// Expects a validated config. Writes losses.pt (--export), the summary (--summary), the trace
// (--trace) and the memory CSV (--memory-csv), also when the run fails, so nothing recorded is lost.
RunResult runTraining(const config::RunConfig& config, const std::string& workerExecutable,
                      const RunCallbacks& callbacks, const RecordingSink& sink = {});

}  // namespace shardscope::engine
