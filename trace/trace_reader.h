// Reads a trace written by `--trace` (trace/chrome_trace.h) back into a RunRecording, so a saved
// run can be browsed without running anything (`shardscope view FILE`).
#pragma once

#include <optional>
#include <string>
#include <vector>

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
  std::string clocks;      // the ranks put on rank 0's clock, by how much (per-rank files)
  struct RankClock {
    int64_t shiftNs = 0;           // added to the rank's times
    int64_t offsetNs = 0;          // as measured (the shift, unless within the uncertainty)
    int64_t uncertaintyNs = -1;    // -1: not measured
    std::string host;
  };
  std::vector<RankClock> rankClocks;  // per rank (per-rank files)
};

LoadedTrace loadChromeTrace(const std::string& path);

}  // namespace shardscope::trace
