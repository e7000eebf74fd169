#include "recordings/open_recording.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "files/readable_path.h"
#include "import/profiler_trace.h"
#include "import/snapshot_job.h"
#include "trace/perfetto_reader.h"
#include "trace/rank_event_files.h"
#include "trace/issued_collectives.h"

namespace shardscope::recordings {

namespace fs = std::filesystem;

namespace {

// A failed run's trace with its last collectives, rebuilt from what it holds, as a job's rank files
// give them: the Last collectives tab, and a hang lesson's claim, read them.
trace::LoadedTrace withLastCollectives(trace::LoadedTrace loaded) {
  if (loaded.lastCollectives || !loaded.error.empty()) return loaded;
  trace::CollectiveLogs logs = trace::lastCollectivesOf(loaded.recording);
  if (!logs.ranks.empty()) loaded.lastCollectives = std::make_shared<const trace::CollectiveLogs>(std::move(logs));
  return loaded;
}

OpenedPart loadPart(RecordingKind kind, const std::vector<std::string>& paths, const OpenOptions& options) {
  OpenedPart part;
  part.kind = kind;
  part.where = nameOfPaths(paths);
  const std::string& path = paths.front();
  switch (kind) {
    case RecordingKind::FlightRecorder:
      part.dumps = import::loadFlightRecorderDumps(paths);
      break;
    case RecordingKind::ProfilerJob:
    case RecordingKind::CudaSnapshots:
      part.trace = trace::isDirectory(path) ? import::loadJobDirectory(path) : import::loadProfilerTraceFiles(paths);
      break;
    case RecordingKind::JobDirectory:
      part.trace = trace::loadRankEventFiles(path);
      break;
    case RecordingKind::PerfettoTrace:
      part.trace = withLastCollectives(trace::loadPerfettoTrace(path, options.detailEvents));
      break;
    case RecordingKind::ChromeTrace:
      part.trace = withLastCollectives(trace::loadChromeTrace(path, options.detailEvents));
      break;
    case RecordingKind::Summary:
      part.summary = stats::loadSummary(path);
      break;
  }
  return part;
}

const std::string& errorOf(const OpenedPart& part) {
  switch (part.kind) {
    case RecordingKind::FlightRecorder:
      return part.dumps.error;
    case RecordingKind::Summary:
      return part.summary.error;
    default:
      return part.trace.error;
  }
}

// What is not there, or cannot be read, is said before any reader opens it: a FIFO with no
// writer would block that open for ever.
std::string unreadable(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    if (auto why = files::cannotOpenReason(path); !why.empty()) return why;
    std::error_code error;
    if (!fs::exists(path, error)) {
      return "'" + path +
             "' does not exist: name a trace (run --trace), a summary (--summary), a job's "
             "--trace-dir, or torch.profiler traces (rank-R.pt.trace.json)";
    }
  }
  return "";
}

// A file no reader recognised is read as a summary, whose reader says what it is not.
RecordingKind kindOf(const std::string& path) { return recognise(path).value_or(RecordingKind::Summary); }

bool pytorchJobFile(RecordingKind kind) {
  return kind == RecordingKind::ProfilerJob || kind == RecordingKind::CudaSnapshots;
}

// Several files that are one recording: a job's per-rank traces and snapshots (either alone, or
// both), or its dumps.
bool oneRecording(const std::vector<RecordingKind>& kinds, const std::vector<std::string>& paths) {
  const bool files = std::none_of(paths.begin(), paths.end(), [](const auto& p) { return trace::isDirectory(p); });
  const bool job = std::all_of(kinds.begin(), kinds.end(), pytorchJobFile);
  const bool dumps =
      std::all_of(kinds.begin(), kinds.end(), [](RecordingKind k) { return k == RecordingKind::FlightRecorder; });
  return files && (job || dumps);
}

}  // namespace

std::string nameOfPaths(const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  return paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
}

Recording openRecording(const std::vector<std::string>& paths, const OpenOptions& options) {
  Recording out;
  if (paths.empty()) {
    out.error = "nothing to open: name a trace, a summary, a job's directory, or a PyTorch job's per-rank traces";
    return out;
  }
  if (out.error = unreadable(paths); !out.error.empty()) return out;
  std::vector<RecordingKind> kinds;
  for (const auto& path : paths) kinds.push_back(kindOf(path));
  // The paths of each part, with its kind.
  std::vector<std::pair<RecordingKind, std::vector<std::string>>> recordings;
  if (paths.size() == 1 || oneRecording(kinds, paths)) {
    recordings.emplace_back(kinds.front(), paths);
  } else {
    // Side by side (a run of shardscope's beside a PyTorch job's traces): a part each, in the
    // order named. One rank's file alone is not a job.
    for (size_t i = 0; i < paths.size(); ++i) {
      if (pytorchJobFile(kinds[i]) && !trace::isDirectory(paths[i])) {
        const bool trace = kinds[i] == RecordingKind::ProfilerJob;
        out.error = "'" + paths[i] + "' is one rank's " + (trace ? "torch.profiler trace" : "CUDA memory snapshot") +
                    ": beside other recordings, name a PyTorch job by its folder (rank-R.pt.trace.json), "
                    "or name only its per-rank files";
        return out;
      }
      recordings.emplace_back(kinds[i], std::vector<std::string>{paths[i]});
    }
  }
  for (const auto& [kind, named] : recordings) {
    OpenedPart part = loadPart(kind, named, options);
    if (!errorOf(part).empty()) {
      out.error = errorOf(part);
      out.parts.clear();
      return out;
    }
    out.parts.push_back(std::move(part));
  }
  return out;
}

}  // namespace shardscope::recordings
