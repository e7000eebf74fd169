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

LoadedTrace loadPerfettoTrace(const std::string& path);

}  // namespace shardscope::trace
