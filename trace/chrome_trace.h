// Exports of a RunRecording: Chrome trace JSON (Perfetto and chrome://tracing open it) and the
// memory samples as CSV.
//
// Chrome trace layout: pid = rank (named "rank R"); tid 1 "compute" holds complete events
// (ph "X", cat "compute") for steps, per-unit forward/backward and optimizer steps; tid 2 "comm"
// holds collectives (ph "X", cat "comm", args: op, bytes, bytes_out, unit, phase, group_size,
// algbw_GBps, busbw_GBps, implementation); counter events (ph "C") named "memory" carry one
// series per role in bytes. Times are microseconds since the first event of the run.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "trace/run_recording.h"

namespace shardscope::trace {

void writeChromeTrace(std::ostream& out, const RunRecording& recording,
                      const nlohmann::json& metadata);

// Columns: rank, t_ns (since the run's first event), one column per role in bytes, total.
void writeMemoryCsv(std::ostream& out, const RunRecording& recording);

}  // namespace shardscope::trace
