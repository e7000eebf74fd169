// The engine as a module the executable loads only when it trains: the three things it calls of
// the LibTorch side, in one table that the module hands out by one C name. Starting LibTorch costs
// a process 0.9 s and 450 MB before main; `view`, `estimate`, `--help` and every usage error need
// none of it (app/engine_module.h loads the module).
#pragma once

#include <optional>
#include <string>

#include "config/run_config.h"
#include "engine/launch/rank_worker.h"
#include "engine/launch/run_types.h"
#include "files/unfinished_outputs.h"
#include "trace/names.h"

namespace shardscope::engine {

struct EngineEntry {
  // The table's layout: the module and the executable are built together, and a module of
  // another build that lies beside the executable is refused rather than called wrongly.
  int layout = 0;
  RunResult (*runTraining)(const config::RunConfig&, const std::string& workerExecutable, const RunCallbacks&,
                           const RecordingSink&) = nullptr;
  int (*runRankWorker)(const config::RunConfig&, const WorkerRecording&) = nullptr;
  std::optional<std::string> (*checkDeviceAvailable)(const config::RunConfig&) = nullptr;
  // The executable's span names (trace/names.h), for the recordings the module fills: called once,
  // as the module is loaded, before anything else.
  void (*useNames)(trace::NameTable*) = nullptr;
  // The executable's tables of outputs being written (files/unfinished_outputs.h), where its second
  // Ctrl-C finds the module's partial files: called with useNames.
  void (*useUnfinishedOutputs)(files::UnfinishedOutputs*) = nullptr;
};

// Bumped when EngineEntry or a type it passes changes.
constexpr int kEngineEntryLayout = 3;

// The module's one exported name.
constexpr const char* kEngineEntrySymbol = "shardscope_engine_entry";

}  // namespace shardscope::engine

extern "C" const shardscope::engine::EngineEntry* shardscope_engine_entry();
