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
  std::string note;        // read, with something missing (said, not fatal): per-rank files
  std::string device;      // each rank's device and backend, where the files say (per-rank files)
  bool ranksFailed = false;  // a rank reported an error (per-rank files)
};

LoadedTrace loadChromeTrace(const std::string& path);

}  // namespace shardscope::trace
