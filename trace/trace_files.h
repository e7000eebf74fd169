// The trace files `--trace` writes, chosen by the file's name: FILE.json is Chrome JSON
// (chrome_trace.h: chrome://tracing, Perfetto and any JSON tool read it; for short runs), FILE.pftrace
// Perfetto's protobuf (perfetto_trace.h: a tenth of the bytes, for runs of any length).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "trace/trace_writer.h"

namespace shardscope::trace {

enum class TraceFormat { ChromeJson, Perfetto };

// By the name's ending: ".pftrace" or ".json"; nothing for another name (validate() refuses those,
// config/run_config.cpp, but for a device or pipe, which gets Chrome JSON).
std::optional<TraceFormat> traceFormatOfName(const std::string& path);

std::unique_ptr<TraceWriter> makeTraceWriter(TraceFormat format, std::ostream& out, const nlohmann::json& metadata,
                                             int ranks);
// A whole recording at once (the app's export, a run that kept its detail).
void writeTrace(TraceFormat format, std::ostream& out, const RunRecording& recording, const nlohmann::json& metadata,
                const RunFacts& facts);

}  // namespace shardscope::trace
