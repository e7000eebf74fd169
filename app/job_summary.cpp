#include "app/job_summary.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/reading_notice.h"
#include "config/run_config.h"
#include "engine/launch/run_types.h"
#include "engine/launch/run_summary.h"
#include "files/output_file.h"
#include "files/readable_path.h"
#include "recordings/open_recording.h"
#include "stats/hang_summary.h"
#include "trace/perfetto_reader.h"
#include "trace/rank_event_files.h"

namespace shardscope::app {

namespace {

// What view --summary summarises is one job: its folder, a PyTorch job's per-rank files (traces,
// snapshots or Flight Recorder dumps), or a run's own --trace. Anything else is refused before a
// byte is read, naming the path; "" when the paths are one job.
std::string notOneJob(const std::vector<std::string>& paths) {
  if (paths.size() > 1 &&
      std::any_of(paths.begin(), paths.end(), [](const auto& p) { return trace::isDirectory(p); })) {
    return "view --summary writes one job's summary: name one directory, or one PyTorch job's per-rank "
           "traces, and run it once per job.";
  }
  for (const auto& path : paths) {
    if (struct stat there{}; ::stat(path.c_str(), &there) != 0) {
      return "'" + path +
             "' does not exist: name a job's --trace-dir, or a PyTorch job's torch.profiler "
             "traces (their directory, or the files, named any way).";
    }
  }
  using recordings::RecordingKind;
  for (const auto& path : paths) {
    if (trace::isDirectory(path)) continue;
    const auto kind = recordings::recognise(path);
    const bool jobFile = kind == RecordingKind::ProfilerJob || kind == RecordingKind::CudaSnapshots ||
                         kind == RecordingKind::FlightRecorder;
    const bool runTrace = kind == RecordingKind::PerfettoTrace || kind == RecordingKind::ChromeTrace;
    if (jobFile || (runTrace && paths.size() == 1)) continue;
    // A damaged gzip file is no kind at all, whatever it held: where it breaks is what to say.
    if (auto damage = files::gzipDamage(path); !damage.empty()) return damage;
    return "view --summary reads a job's --trace-dir, or a PyTorch job's torch.profiler traces (their "
           "directory, or the files: JSON that starts with Kineto's schemaVersion), and '" +
           path + "' is neither; a run's own summary comes from 'shardscope run --summary FILE'.";
  }
  return "";
}

int writeHangSummary(const import::LoadedFlightRecord& loaded, const std::string& summaryPath) {
  printTerminalNotes(loaded.notes);
  const std::string text = stats::hangSummaryJson(loaded.logs).dump(2);
  if (auto error = files::writeOutputFile(summaryPath, [&](std::ostream& out) { out << text << "\n"; })) {
    std::fprintf(stderr, "shardscope: error: %s\n", error->c_str());
    return 1;  // an output that could not be written, as run's (docs/cli.md)
  }
  std::printf("shardscope view: %s of %zu ranks: %s\nThe summary is in %s\n", loaded.logs.source.c_str(),
              loaded.logs.ranks.size(), stats::hangVerdict(loaded.logs).c_str(), summaryPath.c_str());
  return 0;
}

int writeTraceSummary(trace::LoadedTrace loaded, const std::string& dir, const std::string& summaryPath) {
  const bool profiler = !loaded.jobLabel.empty();  // a PyTorch job's own traces
  printTerminalNotes(trace::loaderNotes(dir, loaded));
  engine::RunResult result;
  // How the run ended, where its trace says (a failed or interrupted run's trace reads as such).
  const auto ended = loaded.runStatus;
  result.ok = !loaded.ranksFailed && ended != trace::RunStatus::Failed && ended != trace::RunStatus::Interrupted;
  result.stopped = ended == trace::RunStatus::Interrupted;
  result.error = loaded.runError.empty() ? loaded.note : loaded.runError;
  result.stepsTrained = loaded.stepsTrained;
  result.worldSize = loaded.recording.ranks();
  result.rankPlacements = loaded.rankPlacements;
  result.untracedRanks = loaded.untracedRanks;
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
  if (auto error = engine::writeSummaryFile(summaryPath, loaded.config, result, loaded.recording)) {
    std::fprintf(stderr, "shardscope: error: %s\n", error->c_str());
    return 1;  // an output that could not be written, as run's (docs/cli.md)
  }
  const size_t steps = result.losses.size();
  std::printf("shardscope view: the summary of the job in %s (%d ranks, %zu steps) written to %s\n", dir.c_str(),
              result.worldSize, steps, summaryPath.c_str());
  // Recorded in part (events dropped, steps lost; said above): never "ok" in silence, as run's exit 3.
  return engine::runStatusOf(result, loaded.recording) == trace::RunStatus::Incomplete ? 3 : 0;
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
  // Before any reader opens them: a FIFO with no writer would block that open for ever.
  for (const auto& path : paths) {
    if (auto why = files::cannotOpenReason(path); !why.empty()) {
      std::fprintf(stderr, "shardscope: error: %s\n", why.c_str());
      return 2;
    }
  }
  // Where the summary goes, before a trace of gigabytes is read: a usage error, as run's outputs.
  config::RunConfig output;
  output.summaryPath = summaryPath;
  if (auto problem = config::outputsProblem(output)) {
    std::fprintf(stderr, "shardscope: error: %s\n", problem->c_str());
    return 2;
  }
  if (auto problem = notOneJob(paths); !problem.empty()) {
    std::fprintf(stderr, "shardscope: error: %s\n", problem.c_str());
    return 2;
  }
  // A run's trace of any length is read within the window's memory: its older steps folded into
  // their running figures, which the summary reads (its detail-only figures, the stragglers and
  // the last collectives, are then of the steps kept, as in a long run's own summary).
  auto opened = [&] {
    ReadingNotice notice("shardscope view", paths);
    return recordings::openRecording(paths, {trace::kDefaultDetailEvents});
  }();
  if (opened.error.empty() && opened.parts.size() != 1) {
    opened.error = "view --summary writes one job's summary, and " + recordings::nameOfPaths(paths) +
                   " are recordings of different kinds: run it once per job.";
  }
  if (!opened.error.empty()) {
    std::fprintf(stderr, "shardscope: error: %s\n", opened.error.c_str());
    return 2;
  }
  auto& part = opened.parts.front();
  if (part.kind == recordings::RecordingKind::FlightRecorder) return writeHangSummary(part.dumps, summaryPath);
  return writeTraceSummary(std::move(part.trace), part.where, summaryPath);
}

}  // namespace shardscope::app
