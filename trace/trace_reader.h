// Reads a trace written by `--trace` (trace/chrome_trace.h) back into a RunRecording, so a saved
// run can be browsed without running anything (`shardscope view FILE`).
#pragma once

#include <optional>
#include <string>

#include "config/run_config.h"
#include "trace/run_recording.h"

namespace shardscope::trace {

struct LoadedTrace {
  RunRecording recording;
  RunConfig config;        // from the trace's otherData (defaults where absent)
  std::string error;       // set when the file could not be read
};

LoadedTrace loadChromeTrace(const std::string& path);

}  // namespace shardscope::trace
