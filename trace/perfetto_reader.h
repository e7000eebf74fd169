// Reads a trace written as FILE.pftrace (perfetto_trace.h) back into a RunRecording, for `shardscope
// view`. The file is read packet by packet, never whole: its size is bounded by what the recording
// it holds needs in memory, not by a cap on the file.
#pragma once

#include <string>

#include "trace/trace_reader.h"

namespace shardscope::trace {

// Whether the file starts as a protobuf trace does (a Trace's first packet, field 1 bytes), not as
// JSON: told by content, whatever the name.
bool looksLikePerfettoTrace(const std::string& path);

// `detailEvents` > 0: the recording holds at most about that many events in detail over its ranks,
// folding its older steps as it reads (RunRecording::keepDetailWithinOverRanks; each rank's events
// come in time order), so a trace of any length opens within that memory; every figure still
// covers the whole run. 0: all in detail. (A Chrome JSON trace folds likewise: trace_reader.h.)
LoadedTrace loadPerfettoTrace(const std::string& path, size_t detailEvents = 0);

}  // namespace shardscope::trace
