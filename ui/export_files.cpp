#include "ui/export_files.h"

#include "trace/chrome_trace.h"
#include "files/output_file.h"

namespace shardscope::ui {

std::string exportSessions(const std::vector<Session>& sessions, const std::string& base, ExportFormat format) {
  if (sessions.empty()) return "nothing to write yet: press Run or Compare first\n";
  const bool trace = format == ExportFormat::TraceJson;
  std::string message;
  for (const auto& s : sessions) {
    if (s.fromSummary) {
      message +=
          "nothing to write for " + s.title + ": it was opened from a summary, which holds figures but no timeline\n";
      continue;
    }
    const std::string path =
        base + (sessions.size() > 1 ? "." + std::string(config::strategyName(s.config.strategy)) : std::string()) +
        (trace ? ".json" : ".csv");
    const auto error = files::writeOutputFile(path, [&](std::ostream& out) {
      // What the ranks reported, for the trace opened again (its capacity line and MFU), and what
      // their buffers dropped (so it reopens as incomplete as it is).
      trace::RunFacts facts{s.parameterCount, s.deviceFacts.memoryBytes, s.deviceFacts.peakFlops, {}};
      for (int r = 0; r < s.recording.ranks(); ++r) facts.droppedEvents.push_back(s.recording.rank(r).dropped);
      if (trace)
        trace::writeChromeTrace(out, s.recording, s.config.toJson(), facts);
      else
        trace::writeMemoryCsv(out, s.recording);
    });
    message += error ? *error + "\n" : "wrote " + path + "\n";
  }
  return message;
}

}  // namespace shardscope::ui
