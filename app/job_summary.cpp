#include "app/job_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/reading_notice.h"
#include "engine/launch/run_types.h"
#include "engine/launch/run_summary.h"
#include "files/output_file.h"
#include "stats/hang_summary.h"
#include "stats/summary_reader.h"
#include "import/flight_recorder.h"
#include "trace/perfetto_reader.h"
#include "import/profiler_trace.h"
#include "trace/rank_event_files.h"

namespace shardscope::app {

namespace {

// The job's ranks: its directory (shardscope's per-rank files, or torch.profiler traces),
// torch.profiler traces named one by one, or a run's own --trace (Perfetto's protobuf or Chrome
// JSON), each told by its content.
trace::LoadedTrace loadJob(const std::vector<std::string>& paths) {
  if (paths.size() == 1 && trace::isDirectory(paths.front())) return trace::loadJobDirectory(paths.front());
  // A run's trace of any length is read within the window's memory: its older steps folded into
  // their running figures, which the summary reads (its detail-only figures, the stragglers and
  // the last collectives, are then of the steps kept, as in a long run's own summary).
  if (paths.size() == 1 && trace::looksLikePerfettoTrace(paths.front())) {
    return trace::loadPerfettoTrace(paths.front(), trace::kDefaultDetailEvents);
  }
  if (paths.size() == 1 && !trace::looksLikeProfilerTrace(paths.front()) && looksLikeTrace(paths.front())) {
    return trace::loadChromeTrace(paths.front());
  }
  if (paths.size() > 1 &&
      std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return trace::isDirectory(p); })) {
    trace::LoadedTrace out;
    out.error =
        "view --summary writes one job's summary: name one directory, or one PyTorch job's per-rank "
        "traces, and run it once per job.";
    return out;
  }
  for (const auto& path : paths) {
    if (struct stat there{}; ::stat(path.c_str(), &there) != 0) {
      trace::LoadedTrace out;
      out.error = "'" + path +
                  "' does not exist: name a job's --trace-dir, or a PyTorch job's torch.profiler "
                  "traces (their directory, or the files, named any way).";
      return out;
    }
    const bool profilerFile = trace::looksLikeProfilerTrace(path) || trace::isCudaSnapshotFileName(path);
    if (!profilerFile || trace::isDirectory(path)) {
      trace::LoadedTrace out;
      out.error =
          "view --summary reads a job's --trace-dir, or a PyTorch job's torch.profiler traces (their "
          "directory, or the files: JSON that starts with Kineto's schemaVersion), and '" +
          path + "' is neither; a run's own summary comes from 'shardscope run --summary FILE'.";
      return out;
    }
  }
  return trace::loadProfilerTraceFiles(paths);
}

// Flight Recorder dumps: a directory of them (and no run's files or profiler traces beside), or
// the dumps named one by one.
bool isFlightRecorderJob(const std::vector<std::string>& paths) {
  if (paths.size() == 1 && trace::isDirectory(paths.front())) {
    const auto& dir = paths.front();
    return trace::isFlightRecorderDirectory(dir) && !trace::isProfilerTraceDirectory(dir) &&
           !trace::isRankEventDirectory(dir);
  }
  return std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
    return !trace::isDirectory(p) && trace::looksLikeFlightRecorderDump(p);
  });
}

int writeHangSummary(const std::vector<std::string>& paths, const std::string& summaryPath) {
  const auto loaded = trace::loadFlightRecorderDumps(paths);
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "shardscope: error: %s\n", loaded.error.c_str());
    return 2;
  }
  printTerminalNotes(loaded.notes);
  const std::string text = hangSummaryJson(loaded.logs).dump(2);
  if (auto error = files::writeOutputFile(summaryPath, [&](std::ostream& out) { out << text << "\n"; })) {
    std::fprintf(stderr, "shardscope: error: %s\n", error->c_str());
    return 2;
  }
  std::printf("shardscope view: %s of %zu ranks: %s\nThe summary is in %s\n", loaded.logs.source.c_str(),
              loaded.logs.ranks.size(), hangVerdict(loaded.logs).c_str(), summaryPath.c_str());
  return 0;
}

}  // namespace

void printTerminalNotes(const std::string& lines) {
  for (size_t begin = 0, end; begin < lines.size(); begin = end + 1) {
    end = lines.find('\n', begin);
    if (end == std::string::npos) end = lines.size();
    std::fprintf(stderr, "shardscope: %s\n", lines.substr(begin, end - begin).c_str());
  }
}

int writeJobSummary(const std::vector<std::string>& paths, const std::string& summaryPath) {
  if (isFlightRecorderJob(paths)) return writeHangSummary(paths, summaryPath);
  auto loaded = [&] {
    ReadingNotice notice("shardscope view", paths);
    return loadJob(paths);
  }();
  const bool profiler = !loaded.jobLabel.empty();  // a PyTorch job's own traces
  const std::string dir =
      paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "shardscope: error: %s\n", loaded.error.c_str());
    return 2;
  }
  printTerminalNotes(trace::loaderNotes(dir, loaded));
  RunResult result;
  result.ok = !loaded.ranksFailed;
  result.error = loaded.note;
  result.worldSize = loaded.recording.ranks();
  result.rankPlacements = loaded.rankPlacements;
  result.deviceDescription = loaded.device;
  result.parameterCount = loaded.parameterCount;
  result.device = {loaded.deviceMemoryBytes, loaded.measuredPeakFlops};
  result.clocks = loaded.rankClocks;
  result.lastCollectives = loaded.lastCollectives;
  if (profiler) {
    result.source = loaded.source.empty() ? "torch.profiler" : loaded.source;
    result.title = loaded.title;
  }
  // Every rank reports the global mean loss; the first recorded rank's steps are the job's.
  // torch.profiler records no loss: its steps are listed with a null loss (NaN is written as null).
  const trace::RankTimeline* firstRank =
      loaded.recording.ranks() > 0 ? &loaded.recording.rank(trace::firstRecordedRank(loaded.recording)) : nullptr;
  // A long run's trace is read with its older steps folded (their losses kept), then its detail.
  if (firstRank && !profiler) result.losses = firstRank->folded.losses;
  for (size_t s = 0; firstRank && s < firstRank->steps.size(); ++s)
    result.losses.push_back(profiler ? std::nan("") : firstRank->steps[s].loss);
  if (auto error = writeSummaryFile(summaryPath, loaded.config, result, loaded.recording)) {
    std::fprintf(stderr, "shardscope: error: %s\n", error->c_str());
    return 2;
  }
  const size_t steps = result.losses.size();
  std::printf("shardscope view: the summary of the job in %s (%d ranks, %zu steps) written to %s\n", dir.c_str(),
              result.worldSize, steps, summaryPath.c_str());
  return 0;
}

}  // namespace shardscope::app
