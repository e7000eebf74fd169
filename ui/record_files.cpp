#include "ui/record_files.h"

#include <memory>
#include <utility>

#include "recordings/open_recording.h"

namespace shardscope::ui {

namespace {

OpenedRecord fromSummary(stats::LoadedSummary summary) {
  OpenedRecord out;
  for (auto& run : summary.runs) {
    Session s;
    // A PyTorch job's summary names its session: its config holds only the world, and a
    // strategy title would be shardscope's default (ddp), not the job's.
    s.title = run.title.empty() ? config::strategyTitle(run.config.strategy) : run.title;
    s.config = run.config;
    // "incomplete": it trained every step, and its recording lost events (said, not a failure).
    s.status = run.status == "ok" || run.status == "incomplete" ? SessionStatus::Done : SessionStatus::Failed;
    out.incomplete |= run.status == "incomplete";
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

// Under a reopened trace's title: why its run failed, or what the trace was read with; and the
// steps its run trained that the trace lost (its dropped events are said under it anyway).
std::string traceSessionNote(const trace::LoadedTrace& loaded, bool failed) {
  std::string note = failed ? loaded.runError : loaded.note;
  if (const int64_t lostSteps = trace::stepsLost(loaded); lostSteps > 0) {
    note += (note.empty() ? "" : "\n") + std::string("recording incomplete: the run trained ") +
            std::to_string(*loaded.stepsTrained) + " steps, and the trace lost " + std::to_string(lostSteps) +
            " of them";
  }
  return note;
}

OpenedRecord fromTrace(trace::LoadedTrace loaded, const std::string& where) {
  OpenedRecord out;
  out.notes = trace::loaderNotes(where, loaded);
  Session s;
  s.title = loaded.title.empty() ? config::strategyTitle(loaded.config.strategy) : loaded.title;
  // What its run's recording lost, in the title as well as under it (the trace's end says).
  const std::string lost = trace::incompleteRecordingText(loaded);
  const bool failed = loaded.runStatus == trace::RunStatus::Failed || loaded.runStatus == trace::RunStatus::Interrupted;
  out.incomplete = !lost.empty() && !failed && !loaded.ranksFailed;
  if (out.incomplete) s.title += " (recording incomplete)";
  s.error = traceSessionNote(loaded, failed);  // before the recording moves: it counts the steps held
  s.jobLabel = loaded.jobLabel;
  s.config = loaded.config;
  s.recording = std::move(loaded.recording);
  // A long run's .pftrace is read with its older steps folded (openRecord): said under its title.
  s.everyStepIn = where + " (view --window-events holds more of them in detail)";
  s.status = loaded.ranksFailed || failed ? SessionStatus::Failed : SessionStatus::Done;
  // The ranks' own placements where the files say; else the device and backend the trace's
  // configuration names (a Chrome trace records no placement).
  s.device = !loaded.device.empty()                             ? loaded.device
             : loaded.config.device == config::DeviceKind::Cuda ? "cuda / nccl (recorded)"
                                                                : "cpu / gloo (recorded)";
  s.parameterCount = loaded.parameterCount;
  s.deviceFacts = {loaded.deviceMemoryBytes, loaded.measuredPeakFlops};
  s.collectiveLogs = loaded.lastCollectives;
  out.sessions.push_back(std::move(s));
  out.ownConfig = loaded.jobLabel.empty();
  if (out.ownConfig) out.config = loaded.config;
  return out;
}

// PyTorch's Flight Recorder dumps: a session of their collective logs, with no timeline.
OpenedRecord fromFlightRecorder(import::LoadedFlightRecord loaded, const std::string& where) {
  OpenedRecord out;
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

// One recording the door read, as the sessions the window draws.
OpenedRecord fromPart(recordings::OpenedPart part) {
  switch (part.kind) {
    case recordings::RecordingKind::Summary:
      return fromSummary(std::move(part.summary));
    case recordings::RecordingKind::FlightRecorder:
      return fromFlightRecorder(std::move(part.dumps), part.where);
    default:
      return fromTrace(std::move(part.trace), part.where);
  }
}

}  // namespace

OpenedRecord openRecord(const std::vector<std::string>& paths, size_t detailEvents) {
  OpenedRecord out;
  auto opened = recordings::openRecording(paths, {detailEvents});
  if (!opened.error.empty()) {
    out.error = opened.error;
    return out;
  }
  // Side by side, in the order named; the first of shardscope's own gives the panels their
  // configuration.
  for (auto& part : opened.parts) {
    OpenedRecord one = fromPart(std::move(part));
    if (one.ownConfig && !out.ownConfig) {
      out.ownConfig = true;
      out.config = one.config;
    }
    out.notes += one.notes;
    out.incomplete |= one.incomplete;
    for (auto& session : one.sessions) out.sessions.push_back(std::move(session));
  }
  return out;
}

}  // namespace shardscope::ui
