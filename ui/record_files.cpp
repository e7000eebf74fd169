#include "ui/record_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "files/file_text.h"
#include "stats/summary_reader.h"
#include "import/flight_recorder.h"
#include "trace/perfetto_reader.h"
#include "import/profiler_trace.h"
#include "trace/rank_event_files.h"
#include "import/snapshot_job.h"
#include "trace/trace_reader.h"

namespace shardscope::ui {

namespace fs = std::filesystem;

namespace {

constexpr std::streamoff kSummaryTailBytes = 256 << 10;

bool summarySchemaNearEnd(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - kSummaryTailBytes);
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail.find("\"shardscope.summary/") != std::string::npos ||
         tail.find("\"shardscope.compare/") != std::string::npos;
}

// A torch.profiler trace by its content (import/profiler_trace.h), or a CUDA memory snapshot.
bool looksLikeProfilerTrace(const std::string& path) {
  return trace::isCudaSnapshotFileName(path) || trace::looksLikeProfilerTrace(path);
}

OpenedRecord fromSummary(const std::string& path) {
  OpenedRecord out;
  auto summary = loadSummary(path);
  if (!summary.error.empty()) {
    out.error = summary.error;
    return out;
  }
  for (auto& run : summary.runs) {
    Session s;
    // A PyTorch job's summary names its session: its config holds only the world, and a
    // strategy title would be shardscope's default (ddp), not the job's.
    s.title = run.title.empty() ? strategyTitle(run.config.strategy) : run.title;
    s.config = run.config;
    // "incomplete": it trained every step, and its recording lost events (said, not a failure).
    s.status = run.status == "ok" || run.status == "incomplete" ? SessionStatus::Done : SessionStatus::Failed;
    s.error = run.status == "incomplete" ? "recording incomplete: the ranks dropped events (each rank's dropped_events)"
                                         : run.error;
    s.device = run.device;
    s.losses = run.losses;
    s.fromSummary = true;
    if (!run.source.empty()) s.jobLabel = "a PyTorch job's own model (recorded by " + run.source + ")";
    s.savedStats = std::move(run.ranks);
    out.sessions.push_back(std::move(s));
  }
  out.ownConfig = !summary.runs.empty() && summary.runs.front().source.empty();
  if (out.ownConfig) out.config = summary.runs.front().config;
  return out;
}

OpenedRecord fromTrace(trace::LoadedTrace loaded, const std::string& where) {
  OpenedRecord out;
  if (!loaded.error.empty()) {
    out.error = loaded.error;
    return out;
  }
  out.notes = trace::loaderNotes(where, loaded);
  Session s;
  s.title = loaded.title.empty() ? strategyTitle(loaded.config.strategy) : loaded.title;
  s.jobLabel = loaded.jobLabel;
  s.config = loaded.config;
  s.recording = std::move(loaded.recording);
  // A long run's .pftrace is read with its older steps folded (openRecord): said under its title.
  s.everyStepIn = where + " (view --window-events holds more of them in detail)";
  s.status = loaded.ranksFailed ? SessionStatus::Failed : SessionStatus::Done;
  // The ranks' own placements where the files say; else the device and backend the trace's
  // configuration names (a Chrome trace records no placement).
  s.device = !loaded.device.empty()                     ? loaded.device
             : loaded.config.device == DeviceKind::Cuda ? "cuda / nccl (recorded)"
                                                        : "cpu / gloo (recorded)";
  s.error = loaded.note;
  s.parameterCount = loaded.parameterCount;
  s.deviceFacts = {loaded.deviceMemoryBytes, loaded.measuredPeakFlops};
  s.collectiveLogs = loaded.lastCollectives;
  out.sessions.push_back(std::move(s));
  out.ownConfig = loaded.jobLabel.empty();
  if (out.ownConfig) out.config = loaded.config;
  return out;
}

// PyTorch's Flight Recorder dumps: a session of their collective logs, with no timeline.
OpenedRecord fromFlightRecorder(const std::vector<std::string>& paths, const std::string& where) {
  OpenedRecord out;
  auto loaded = trace::loadFlightRecorderDumps(paths);
  if (!loaded.error.empty()) {
    out.error = loaded.error;
    return out;
  }
  out.notes = loaded.notes;
  Session s;
  s.title = "Flight Recorder (" + where + ")";
  s.jobLabel = "a PyTorch job's last collectives (" + loaded.logs.source + "): no timeline, see Last collectives";
  s.status = SessionStatus::Done;
  s.device = "as the job ran";
  s.config.world = loaded.logs.worldSize;
  s.collectiveLogs = std::make_shared<const trace::CollectiveLogs>(std::move(loaded.logs));
  out.sessions.push_back(std::move(s));
  return out;
}

bool isFlightRecorderOnly(const std::string& dir) {
  return trace::isFlightRecorderDirectory(dir) && !trace::isProfilerTraceDirectory(dir) &&
         !trace::isRankEventDirectory(dir);
}

// One path: a directory (a job's files, torch.profiler traces, or Flight Recorder dumps), a
// profiler trace, a run's trace, a Flight Recorder dump, or a summary.
OpenedRecord openOne(const std::string& path, size_t detailEvents) {
  if (trace::isDirectory(path) && isFlightRecorderOnly(path)) return fromFlightRecorder({path}, path);
  if (!trace::isDirectory(path) && trace::looksLikeFlightRecorderDump(path)) return fromFlightRecorder({path}, path);
  if (trace::isDirectory(path)) {
    return fromTrace(trace::loadJobDirectory(path), path);
  }
  if (looksLikeProfilerTrace(path)) return fromTrace(trace::loadProfilerTraceFiles({path}), path);
  if (trace::looksLikePerfettoTrace(path)) return fromTrace(trace::loadPerfettoTrace(path, detailEvents), path);
  if (looksLikeTrace(path)) return fromTrace(trace::loadChromeTrace(path), path);
  return fromSummary(path);
}

}  // namespace

OpenedRecord openRecord(const std::vector<std::string>& paths, size_t detailEvents) {
  OpenedRecord out;
  if (paths.empty()) {
    out.error = "nothing to open: name a trace, a summary, a job's directory, or a PyTorch job's per-rank traces";
    return out;
  }
  for (const auto& path : paths) {
    std::error_code error;
    if (!fs::exists(path, error)) {
      out.error = "'" + path +
                  "' does not exist: name a trace (run --trace), a summary (--summary), a job's "
                  "--trace-dir, or torch.profiler traces (rank-R.pt.trace.json)";
      return out;
    }
  }
  const bool oneJob = std::all_of(paths.begin(), paths.end(), [](const std::string& path) {
    return !trace::isDirectory(path) && looksLikeProfilerTrace(path);
  });
  const bool dumps = std::all_of(paths.begin(), paths.end(), [](const std::string& path) {
    return !trace::isDirectory(path) && trace::looksLikeFlightRecorderDump(path);
  });
  if (paths.size() > 1 && dumps) {
    return fromFlightRecorder(paths, paths.front() + " and " + std::to_string(paths.size() - 1) + " more");
  }
  if (paths.size() > 1 && oneJob) {
    return fromTrace(trace::loadProfilerTraceFiles(paths),
                     paths.front() + " and " + std::to_string(paths.size() - 1) + " more");
  }
  if (paths.size() == 1) return openOne(paths.front(), detailEvents);
  // Several recordings side by side (a run of shardscope's beside a PyTorch job's traces), in the
  // order named; the first of shardscope's own gives the panels their configuration.
  for (const auto& path : paths) {
    if (!trace::isDirectory(path) && looksLikeProfilerTrace(path)) {
      out.error = "'" + path +
                  "' is one rank's torch.profiler trace: beside other recordings, name a PyTorch "
                  "job by its folder (rank-R.pt.trace.json), or name only its per-rank files";
      return out;
    }
  }
  for (const auto& path : paths) {
    OpenedRecord one = openOne(path, detailEvents);
    if (!one.error.empty()) return one;
    if (one.ownConfig && !out.ownConfig) {
      out.ownConfig = true;
      out.config = one.config;
    }
    out.notes += one.notes;
    for (auto& s : one.sessions) out.sessions.push_back(std::move(s));
  }
  return out;
}

std::string describeRecordPath(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    if (trace::isProfilerTraceDirectory(path)) return "torch.profiler traces";
    if (trace::isFlightRecorderDirectory(path)) return "Flight Recorder dumps";
    if (trace::isCudaSnapshotDirectory(path)) return "CUDA memory snapshots";
    if (trace::isRankEventDirectory(path)) return "a job's --trace-dir";
    return "";
  }
  if (trace::isCudaSnapshotFileName(path)) return "CUDA memory snapshot";
  if (trace::looksLikePerfettoTrace(path)) return "Perfetto trace";
  if (trace::looksLikeFlightRecorderDump(path)) return "Flight Recorder dump";
  const std::string ext = fs::path(path).extension().string();
  if (ext != ".json" && ext != ".gz") return "";
  if (looksLikeProfilerTrace(path)) return "torch.profiler trace";
  if (looksLikeTrace(path)) return "trace";
  // A summary's keys are written in name order: "schema" comes after its ranks and before its
  // steps, so near its end; only the end is read (a listing must stay quick).
  return summarySchemaNearEnd(path) ? "summary" : "";
}

}  // namespace shardscope::ui
