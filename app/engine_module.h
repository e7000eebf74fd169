// The training engine, loaded the first time something trains (engine/engine_entry.h): the
// module libshardscope_engine.so beside this executable, or where SHARDSCOPE_ENGINE_MODULE names
// it. Commands that only read, estimate or refuse never load LibTorch.
#pragma once

#include <optional>
#include <string>

#include "engine/engine_entry.h"

namespace shardscope::app {

// Whether this build has the training engine (false: shardscope-viewer, -DSHARDSCOPE_BUILD_ENGINE=OFF).
bool engineBuilt();

// This binary's path, which the ranks are started as (and beside which the engine's module lies).
std::string selfExecutable();

// The engine's entry, loaded on the first call (thread-safe); throws std::runtime_error saying
// which file was tried, why it failed and what to do, when it cannot be loaded.
const engine::EngineEntry& engine();

// The engine's calls, through engine().
engine::RunResult runTraining(const config::RunConfig& config, const std::string& workerExecutable,
                              const engine::RunCallbacks& callbacks, const engine::RecordingSink& sink = {});
int runRankWorker(const config::RunConfig& config, const engine::WorkerRecording& recording);
// Whether the run's device is there: only a CUDA run loads the engine to ask.
std::optional<std::string> checkDeviceAvailable(const config::RunConfig& config);

}  // namespace shardscope::app
