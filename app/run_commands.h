// run and compare in the terminal: progress per step, the tables at the end, and what a stopped
// or failed run kept (command_line.h's commands call these; a lesson run in the terminal too).
#pragma once

#include <string>
#include <vector>

#include "app/engine_module.h"
#include "config/run_config.h"
#include "engine/launch/run_types.h"

namespace shardscope::app {

// A usage error on stderr; exit status 2.
int failUsage(const std::string& message);

// One run with a line per step (and the slow-step notices, the step gate's prompts).
engine::RunResult trainWithProgress(const config::RunConfig& config);
int runHeadless(const config::RunConfig& config);
// `runs` one after another, then one table side by side (and one across world sizes).
int runCompare(const config::RunConfig& base, const std::vector<config::RunConfig>& runs, bool acrossWorlds);

}  // namespace shardscope::app
