// The desktop app: the window with a live engine behind it (`shardscope`, `run --screenshot`) or a
// saved trace (`shardscope view FILE`).
#pragma once

#include <string>

#include "trace/run_config.h"

namespace shardscope::app {

// Opens the window with `config` in the configuration panel. With `startImmediately`, the run (or
// compare) starts at once; with a screenshot path, the window is hidden, and the PNG is written
// when the run has ended.
int runGui(const RunConfig& config, const std::string& workerExecutable, bool startImmediately,
           bool compare, const std::string& screenshotPath);

// Opens a saved trace for browsing; with a screenshot path, writes the PNG and exits.
int viewFile(const std::string& path, const std::string& screenshotPath);

}  // namespace shardscope::app
