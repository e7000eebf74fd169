#include "trace/trace_files.h"

#include "trace/chrome_trace.h"
#include "trace/perfetto_trace.h"

namespace shardscope::trace {

namespace {
bool endsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}
}  // namespace

std::optional<TraceFormat> traceFormatOfName(const std::string& path) {
  if (endsWith(path, ".pftrace")) return TraceFormat::Perfetto;
  if (endsWith(path, ".json")) return TraceFormat::ChromeJson;
  return std::nullopt;
}

std::unique_ptr<TraceWriter> makeTraceWriter(TraceFormat format, std::ostream& out, const nlohmann::json& metadata,
                                             int ranks) {
  if (format == TraceFormat::Perfetto) return std::make_unique<PerfettoTraceWriter>(out, metadata, ranks);
  return std::make_unique<ChromeTraceWriter>(out, metadata, ranks);
}

void writeTrace(TraceFormat format, std::ostream& out, const RunRecording& recording, const nlohmann::json& metadata,
                const RunFacts& facts) {
  const int64_t origin = recording.originNs() == INT64_MAX ? 0 : recording.originNs();
  auto writer = makeTraceWriter(format, out, metadata, recording.ranks());
  for (int r = 0; r < recording.ranks(); ++r) writer->write(r, recording.rank(r), origin);
  writer->finish(facts);
}

}  // namespace shardscope::trace
