#include "ui/app_window.h"

#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdio>
#include <utility>

#include <imgui.h>

#include "config/model_layout.h"
#include "config/pipeline_config.h"
#include "config/view_tabs.h"
#include "ui/bottom_tabs.h"
#include "ui/front_door.h"
#include "ui/item_probe.h"
#include "ui/key_codes.h"
#include "ui/lesson_view.h"
#include "ui/open_panel.h"
#include "ui/panels.h"
#include "ui/step_through.h"
#include "ui/rank_rows.h"
#include "ui/theme.h"
#include "ui/throughput_lane.h"

namespace shardscope::ui {

namespace {

const char* statusText(SessionStatus s) {
  switch (s) {
    case SessionStatus::Starting:
      return "starting";
    case SessionStatus::Running:
      return "running";
    case SessionStatus::Done:
      return "done";
    case SessionStatus::Failed:
      return "failed";
  }
  return "";
}

double sessionDuration(const Session& s) {
  const auto& rec = s.recording;
  if (rec.originNs() == INT64_MAX) return 0;
  int64_t last = rec.originNs();
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    if (!t.memory.empty()) last = std::max(last, t.memory.time(t.memory.size() - 1));
    if (!t.compute.empty()) last = std::max(last, t.compute.back().endNs);
    if (!t.collectives.empty()) last = std::max(last, t.collectives.back().endNs);
  }
  return static_cast<double>(last - rec.originNs());
}

// The earliest time a session still holds in detail, from its origin: 0 unless it folded steps.
double sessionDetailStart(const Session& s) {
  const auto& rec = s.recording;
  if (rec.originNs() == INT64_MAX) return 0;
  int64_t first = INT64_MAX;
  bool folded = false;
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    folded = folded || t.folded.steps > 0;
    if (!t.memory.empty()) first = std::min(first, t.memory.time(0));
    if (!t.compute.empty()) first = std::min(first, t.compute.front().beginNs);
    if (!t.collectives.empty()) first = std::min(first, t.collectives.front().beginNs);
    if (!t.groups.empty()) first = std::min(first, t.groups.front().beginNs);
  }
  return folded && first != INT64_MAX ? static_cast<double>(first - rec.originNs()) : 0;
}

// Each session's top of the memory lanes: the largest rank's peak over every session (so heights
// compare across strategies), or with ownMemoryScale each session's own (so a small peak is not
// flattened on a large one's scale). 10% headroom above the peak.
std::vector<double> memoryScales(const std::vector<Session>& sessions, const TimelineStyle& style, bool ownScale) {
  const bool deviceLanesShown = style.showRole[static_cast<int>(trace::MemoryRole::AllocatorCache)] ||
                                style.showRole[static_cast<int>(trace::MemoryRole::DeviceRuntime)];
  std::vector<double> scales;
  for (const auto& s : sessions) {
    double peak = 0;
    for (int r = 0; r < s.recording.ranks(); ++r) {
      const auto& t = s.recording.rank(r);
      peak = std::max(peak, static_cast<double>(deviceLanesShown ? t.peakDevice : t.peakTotal));
    }
    scales.push_back(peak * 1.1);
  }
  if (!ownScale) {
    const double shared = scales.empty() ? 0 : *std::max_element(scales.begin(), scales.end());
    std::fill(scales.begin(), scales.end(), shared);
  }
  return scales;
}

// The memory lane height that fits every shown rank into `avail` pixels, but never below a readable
// minimum: below it the timelines scroll instead of shrinking (projector mode, four strategies).
float fittedMemoryLaneHeight(const std::vector<Session>& sessions, const std::vector<size_t>& shown,
                             const AppState& state, float avail) {
  const TimelineStyle& style = state.style;
  int groups = 0;
  float hostShares = 0;  // memory lane heights the host lanes add (--offload cpu)
  float pipelineLanes = 0;  // the heights a pipeline run's two lanes per rank add
  for (size_t i : shown) {
    const auto expanded = state.expandedRankGroups.find(static_cast<int>(i));
    const auto all =
        rankRows(sessions[i].recording, expanded == state.expandedRankGroups.end() ? std::set<int>{} : expanded->second,
                 !sessions[i].jobLabel.empty());
    const int rows = static_cast<int>(std::count_if(all.begin(), all.end(), [](const RankRow& r) {
      return r.missingRanks.empty();  // the line for ranks without a trace has no lanes
    }));
    groups += std::max(1, rows);
    if (recordsHostMemory(sessions[i].recording)) hostShares += kHostLaneShare * static_cast<float>(std::max(1, rows));
    if (i < state.pipelineLanes.size() && !state.pipelineLanes[i].actions.empty()) {
      pipelineLanes += (3 * style.spanLaneHeight + px(5)) * static_cast<float>(std::max(1, rows));
    }
  }
  if (groups == 0) return style.memoryLaneHeight;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // Per session: title and details lines, the time ruler, the throughput lane, the separator.
  const float perSession = 2 * line + (ImGui::GetFontSize() + px(5)) + px(30) + 3 * ImGui::GetStyle().ItemSpacing.y;
  const float perGroup = 2 * style.spanLaneHeight + px(10);
  const float room = avail - perSession * static_cast<float>(shown.size()) - pipelineLanes - px(8);
  const float memoryLanes = static_cast<float>(groups) + hostShares;
  return std::clamp((room - perGroup * static_cast<float>(groups)) / memoryLanes, px(56), px(240));
}

// An open that finished, taken in once (its sessions are in the store by then): the view is fitted
// to them again. Every frame, whether or not the sidebar is shown (focus mode hides it).
void takeInFinishedOpen(AppState& state, const EngineControl& engine) {
  const OpenStatus status = engine.openStatus();
  if (status.reading || status.finished == state.open.seenFinished) return;
  state.open.seenFinished = status.finished;
  if (!status.error.empty()) return;
  state.axis.userMoved = false;
  state.selection.active = false;
  state.expandedRankGroups.clear();
  state.display.focusSession = -1;
  if (state.viewOnly) state.banner = status.beside ? state.banner + ", " + status.what : status.what;
  if (status.ownConfig && !state.viewOnly) state.config = status.config;  // Run runs it again
}

// The sidebar's Open: the panel, and the open it asks for.
void drawOpenSection(AppState& state, EngineControl& engine) {
  const OpenStatus status = engine.openStatus();
  std::vector<std::string> paths;
  if (drawOpenPanel(state.open, engine.busy(), status, paths) == OpenAction::Open) {
    state.open.message = engine.openRecord(paths, state.open.beside);
  }
}

// Files or folders dropped on the window: opened as the Open panel would open them (several: a
// job's per-rank traces, or recordings side by side), the panel unfolded to say how it went.
void openDropped(AppState& state, EngineControl& engine) {
  if (state.droppedPaths.empty()) return;
  state.display.focusSession = -1;
  state.open.expand = true;
  std::snprintf(state.open.path, sizeof state.open.path, "%s", state.droppedPaths.front().c_str());
  state.open.message = engine.openRecord(state.droppedPaths, state.open.beside);
  state.droppedPaths.clear();
}

// Ctrl+O: the sidebar's Open, unfolded, its path field ready for typing (out of focus mode).
void handleOpenKey(AppState& state) {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.KeyCtrl || io.WantTextInput || !ImGui::IsKeyPressed(keys::kO, false)) return;
  state.display.focusSession = -1;
  state.open.expand = true;
  state.open.focusPath = true;
}

// Whether Run and Compare can start the sidebar's configuration, and the runs Compare would start.
struct RunChecks {
  std::string problem;         // why Run cannot start, or ""
  std::string compareProblem;  // why Compare cannot, or ""
  std::vector<config::RunConfig> compareRuns;
};

RunChecks runChecks(const AppState& state, EngineControl& engine) {
  RunChecks checks;
  if (auto e = config::validate(state.config))
    checks.problem = *e;
  else
    checks.problem = engine.checkConfig(state.config);
  checks.compareProblem = compareRunsOf(state.config, state.compare, checks.compareRuns).value_or("");
  if (const std::string none = engine.runsUnavailable(); !none.empty()) checks.problem = checks.compareProblem = none;
  return checks;
}

// What Run, Compare or Stop (the sidebar's, or the first screen's) asked for.
void startAction(AppState& state, EngineControl& engine, ConfigAction action,
                 const std::vector<config::RunConfig>& runs) {
  if (action == ConfigAction::None) return;
  if (action == ConfigAction::Stop) {
    engine.stop();
    return;
  }
  if (action == ConfigAction::Run) engine.startRun(state.config);
  if (action == ConfigAction::Compare) engine.startCompare(runs);
  state.axis.userMoved = false;
  state.selection.active = false;
  state.expandedRankGroups.clear();
}

// The configuration panel on the left: Run / Compare / Stop, the role legend, the display choices.
void drawSidebar(AppState& state, EngineControl* engine, int sessionCount, const RunChecks& checks) {
  ImGui::BeginChild("config", ImVec2(px(300.0f), 0), true);
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "shardscope");
  ImGui::TextDisabled("DDP and FSDP, live, per rank");
  ImGui::Separator();
  if (state.viewOnly) {
    ImGui::TextWrapped("Viewing %s", state.banner.c_str());
    wrappedHint("%s", state.viewNote.c_str());
  }
  // First, folded to one line: what the window shows can come from a file instead of a run.
  if (engine) drawOpenSection(state, *engine);
  if (!state.viewOnly && engine) {
    startAction(state, *engine,
                drawConfigPanel(state.config, state.compare, engine->busy(), checks.problem, checks.compareProblem),
                checks.compareRuns);
    // The third way to fill the window, beside Run and Compare: a job someone else launches.
    if (drawListenPanel(state.listen, engine->busy()) == ListenAction::Listen) {
      state.listen.message = engine->startListen(state.listen.port, state.listen.dir);
      if (state.listen.message.empty()) {
        state.axis.userMoved = false;
        state.selection.active = false;
        state.expandedRankGroups.clear();
      }
    }
  }
  ImGui::Separator();
  drawRoleLegend(state.style.showRole);
  ImGui::Separator();
  drawDisplayControls(state.display, state.playhead.session, sessionCount);
  if (!state.viewOnly) {
    ImGui::Separator();
    drawLessonMenu(state, engine);
  }
  ImGui::EndChild();
}

// --at and --zoom given on the command line, placed once the recording they name is there.
void applyPendingPlayhead(AppState& state, EngineControl* engine) {
  if (!state.pendingAt.empty() && !(engine && engine->busy()) && !state.marks.empty()) {
    const int focus = std::clamp(state.playhead.session, 0, static_cast<int>(state.marks.size()) - 1);
    if (auto at = resolvePlayheadPosition(state.pendingAt, state.marks[static_cast<size_t>(focus)], state.atError)) {
      state.playhead.tNs = *at;
      state.playhead.placed = true;
      state.playhead.playing = false;
    }
    state.pendingAt.clear();
  }
  if (!state.pendingZoom.empty() && !(engine && engine->busy()) && !state.marks.empty()) {
    const int focus = std::clamp(state.playhead.session, 0, static_cast<int>(state.marks.size()) - 1);
    std::string error;
    if (auto window = resolveZoomWindow(state.pendingZoom, state.marks[static_cast<size_t>(focus)], error)) {
      state.axis.beginNs = window->first;
      state.axis.endNs = window->second;
      state.axis.userMoved = true;  // kept, as a zoom by the wheel is
    } else if (state.atError.empty()) {
      state.atError = error;
    }
    state.pendingZoom.clear();
  }
}

// A session's title line, what it ran, and its notes: why it failed, what its recording lacks.
void drawSessionHeader(const Session& s) {
  const ImVec4 statusColor = s.status == SessionStatus::Failed ? ImVec4(1.0f, 0.45f, 0.4f, 1.0f)
                             : s.status == SessionStatus::Done ? ImVec4(0.5f, 0.85f, 0.5f, 1.0f)
                                                               : ImVec4(1.0f, 0.8f, 0.3f, 1.0f);
  ImGui::Text("%s", s.title.c_str());
  ImGui::SameLine();
  ImGui::TextColored(statusColor, "[%s]", statusText(s.status));
  ImGui::SameLine();
  const int folded = !s.fromSummary && s.recording.ranks() > 0 ? s.recording.rank(0).folded.steps : 0;
  const size_t stepsDone = s.fromSummary             ? s.losses.size()
                           : s.recording.ranks() > 0 ? folded + s.recording.rank(0).steps.size()
                                                     : 0;
  const int rankCount = s.fromSummary      ? static_cast<int>(s.savedStats.size())
                        : s.collectiveLogs ? static_cast<int>(s.collectiveLogs->ranks.size())
                                           : s.recording.ranks();
  char lossText[48] = "";
  if (!s.losses.empty()) std::snprintf(lossText, sizeof lossText, "  loss %.4f", s.losses.back());
  if (s.collectiveLogs) {
    ImGui::TextDisabled("%s  %d ranks  %s", s.device.c_str(), rankCount, s.jobLabel.c_str());
  } else if (!s.jobLabel.empty()) {
    const size_t recorded =
        s.fromSummary ? (s.savedStats.empty() ? 0 : static_cast<size_t>(s.savedStats[0].recordedSteps)) : stepsDone;
    ImGui::TextDisabled("%s  %d ranks  %s  %zu steps recorded", s.device.c_str(), rankCount, s.jobLabel.c_str(),
                        recorded);
  } else {
    ImGui::TextDisabled("%s  %d ranks  %s %d layers, hidden %d%s  step %zu/%d%s", s.device.c_str(), rankCount,
                        config::modeName(s.config.model), s.config.layers, s.config.hidden,
                        (config::trainingLabel(s.config) + config::pipelineLabel(s.config)).c_str(), stepsDone,
                        s.config.steps, lossText);
  }
  if (!s.error.empty()) {
    // Red for a run that failed; amber for what a finished recording was read with (a rank
    // without a file, memory held before a profiler started): worth reading, not a failure.
    const bool failed = s.status == SessionStatus::Failed;
    ImGui::PushStyleColor(ImGuiCol_Text, failed ? ImVec4(1.0f, 0.45f, 0.4f, 1.0f) : ImVec4(0.95f, 0.78f, 0.45f, 1.0f));
    ImGui::TextWrapped("%s", s.error.c_str());
    ImGui::PopStyleColor();
  }
  if (const std::string dropped = trace::droppedEventsText(s.recording); !dropped.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.78f, 0.45f, 1.0f));
    ImGui::TextWrapped("recording incomplete: %s (their buffers were full); the figures and the timeline miss them",
                       dropped.c_str());
    ImGui::PopStyleColor();
  }
  if (folded > 0) {
    // Steps numbered as the timeline's markers and event groups number them, from 0.
    ImGui::TextDisabled(
        "steps 0-%d are folded to keep this run within its memory (--window-events): the figures "
        "count them, the timeline and Export show step %d on%s",
        folded - 1, folded,
        !s.everyStepIn.empty()       ? ("; every step is in " + s.everyStepIn).c_str()
        : s.config.tracePath.empty() ? " (run with --trace to keep every step on disk)"
                                     : "; the run's --trace has every step");
  }
  if (s.config.recording == config::RecordingMode::Off) {
    ImGui::TextDisabled(
        "run with --recording off: only step times were measured, so the timeline has no "
        "memory, compute or collectives to show");
  }
}

// Above a diff session's timelines: what lines them up and what B's lanes mark.
void drawDiffSessionNote(const AppState& state, int index) {
  if (index > 1 || !state.diffOverlay.baseline) return;
  if (index == 0 && state.alignment.step < 0) {
    ImGui::TextDisabled("A, not lined up with B: the playhead's step is not in both runs");
    return;
  }
  if (index == 0) {
    ImGui::TextDisabled("A, drawn %s %s so that step %d starts where B's does",
                        formatDuration(std::fabs(state.alignment.shiftNs[0])).c_str(),
                        state.alignment.shiftNs[0] >= 0 ? "earlier" : "later", state.alignment.step);
    return;
  }
  ImGui::TextDisabled(
      "B: %s; outlined with a notch, the collectives whose change passed the gate (magenta, up: slower or "
      "larger; blue, down: faster or smaller); the playhead stands at the same event group in both",
      state.display.diffDifference ? "its memory lanes give B - A (D: A's outline instead)"
                                   : "the cyan outline is A's total memory (D: B - A instead)");
}

// A session's timeline and throughput lane; the cursor and seeks it reports, its drawing counts.
void drawSessionTimeline(AppState& state, const Session& s, int index, double memoryScale, double playheadNs,
                         TimelineCursor& c, TimelineFrameStats& frameStats) {
  TimelineFrameStats st;
  TimelineStyle style = state.style;
  style.shiftNs = state.alignment.shiftNs.size() > static_cast<size_t>(index)
                      ? state.alignment.shiftNs[static_cast<size_t>(index)]
                      : 0.0;
  if (index == 1 && state.diffOverlay.baseline) style.diff = &state.diffOverlay;
  if (static_cast<size_t>(index) < state.pipelineLanes.size() && !state.pipelineLanes[index].actions.empty()) {
    style.pipeline = &state.pipelineLanes[static_cast<size_t>(index)];
  }
  drawDiffSessionNote(state, index);
  style.memoryColumns = &state.memoryColumns;
  style.capacityBytes = stats::deviceLimitsOf(s.config, s.deviceFacts).capacityBytes;  // this session's device
  style.foldRanksWithoutRecords = !s.jobLabel.empty();
  if (!s.jobLabel.empty() && !recordsMemory(s.recording)) {
    style.memoryNotRecorded = true;
    style.memoryLaneHeight = 2 * ImGui::GetFontSize() + px(4.0f);  // the rank's label, and the note
  }
  if (state.display.ownMemoryScale && state.marks.size() > 1) {
    ImGui::TextDisabled("memory lanes scaled to this session's own peak (S: one scale for every session)");
  }
  if (state.display.stragglers && static_cast<size_t>(index) < state.waits.size()) {
    style.waits = &state.waits[static_cast<size_t>(index)];
    ImGui::TextDisabled(
        "stragglers: red mark, this rank issued the collective last; hatched, it waited for the "
        "last rank (W: off)");
  }
  drawTimeline("timeline", s.recording, state.axis, memoryScale, ImGui::GetContentRegionAvail().x, style,
               state.selection, c, &st, playheadNs, &state.expandedRankGroups[index]);
  drawThroughputLane(s.recording, state.axis, ImGui::GetContentRegionAvail().x,
                     throughputWorkOf(s.config, s.parameterCount, s.deviceFacts), style.shiftNs);
  if (c.seek) {
    state.playhead.tNs = c.seekNs;
    state.playhead.placed = true;
    state.playhead.playing = false;
  }
  if ((c.valid || c.seek) && index != state.playhead.session) {
    // In a diff session each run has its own clock: the playhead keeps its moment, on this one's.
    const auto& own = state.alignment.playheadNs;
    if (!c.seek && state.playhead.placed && static_cast<size_t>(index) < own.size()) {
      state.playhead.tNs = own[static_cast<size_t>(index)];
    }
    state.playhead.session = index;
  }
  frameStats.spansDrawn += st.spansDrawn;
  frameStats.spansFolded += st.spansFolded;
  frameStats.memoryColumns += st.memoryColumns;
  frameStats.rowsDrawn += st.rowsDrawn;
  frameStats.waitsHatched += st.waitsHatched;
  frameStats.lastMarks += st.lastMarks;
  frameStats.diffMarks += st.diffMarks;
  frameStats.ghostColumns += st.ghostColumns;
  frameStats.actionCells += st.actionCells;
  frameStats.heldSteps += st.heldSteps;
  frameStats.laneWidth = st.laneWidth;
}

// This frame's keys, drops and finished opens, before the store is locked for the frame (a Run or
// a lesson's Lock in starts sessions, which takes its lock). The number of sessions.
// What the first screen asked for in the last frame (drawn while the store was held), started now.
void startFromTheFrontDoor(AppState& state, EngineControl* engine) {
  const ConfigAction action = std::exchange(state.doorAction, ConfigAction::None);
  const std::string lesson = std::exchange(state.doorLesson, "");
  if (!engine) return;
  if (!lesson.empty()) startLessonNamed(state, engine, lesson);
  startAction(state, *engine, action, state.doorRuns);
}

int handleFrameInput(AppState& state, SessionStore& store, EngineControl* engine) {
  int sessionCount = 0;
  {
    auto peek = store.lock();  // released before the sidebar, whose Run adds a session
    sessionCount = static_cast<int>(store.sessions().size());
  }
  if (state.pendingFocus >= 0 && state.pendingFocus < sessionCount) {
    state.display.focusSession = state.pendingFocus;
    state.pendingFocus = -1;
  }
  if (state.lesson.lockRequested) {
    state.lesson.lockRequested = false;
    lockInAnswers(state, engine);
  }
  startFromTheFrontDoor(state, engine);
  handleDisplayKeys(state.display, state.playhead.session, sessionCount);
  if (engine) {
    handleOpenKey(state);
    openDropped(state, *engine);
    takeInFinishedOpen(state, *engine);
  }
  if (state.display.focusSession >= sessionCount) state.display.focusSession = -1;
  return sessionCount;
}

// The longest session's duration; the axis fitted to every session's detail unless the user moved it.
double fitTimeAxis(AppState& state, const std::vector<Session>& sessions) {
  double duration = 0;
  state.detailStartNs = sessions.empty() ? 0 : std::numeric_limits<double>::infinity();
  for (const auto& s : sessions) {
    duration = std::max(duration, sessionDuration(s));
    state.detailStartNs = std::min(state.detailStartNs, sessionDetailStart(s));
  }
  if (!state.axis.userMoved) state.axis.fit(state.detailStartNs, duration);
  return duration;
}

// What the frame derives from the sessions (their event groups, and the stragglers view's waits
// while it is on), rebuilt only when the store changed, and only now and then while a run records.
void refreshDerived(AppState& state, const SessionStore& store, const std::vector<Session>& sessions) {
  const auto began = DerivedRefresh::Clock::now();
  if (state.marks.size() != sessions.size() ||
      state.marksRefresh.due(store.version(), anyRecording(sessions, /*gatedToo=*/false), began)) {
    // Sessions added, removed or replaced: their marks start again (a basis names its recording's
    // origin and groups, so one of another session's is not taken for its own).
    state.marks.resize(sessions.size());
    state.markBases.resize(sessions.size());
    for (size_t i = 0; i < sessions.size(); ++i) {
      updateGroupMarks(sessions[i].recording, state.marks[i], state.markBases[i]);
    }
    state.marksRefresh.derived(store.version(), began, DerivedRefresh::Clock::now());
  }
  const bool live = anyRecording(sessions);
  if (state.display.stragglers &&
      (state.waits.size() != sessions.size() || state.waitsRefresh.due(store.version(), live, began))) {
    const auto waitsBegan = DerivedRefresh::Clock::now();
    state.waits.clear();
    for (const auto& s : sessions) state.waits.push_back(sessionWaits(s.recording));
    state.waitsRefresh.derived(store.version(), waitsBegan, DerivedRefresh::Clock::now());
  }
  if (state.pipelineLanes.size() != sessions.size() || state.pipelineRefresh.due(store.version(), live, began)) {
    const auto lanesBegan = DerivedRefresh::Clock::now();
    state.pipelineLanes.clear();
    for (const auto& s : sessions) state.pipelineLanes.push_back(pipelineLanesOf(s));
    shareHeldScale(state.pipelineLanes);
    state.pipelineRefresh.derived(store.version(), lanesBegan, DerivedRefresh::Clock::now());
  }
}

// A caption's run (state.scrollToSession), just drawn from `top` to the cursor, scrolled to its top
// unless it is in view already: a lesson's run is never below the fold.
void bringIntoView(AppState& state, int session, float top) {
  if (session != state.scrollToSession) return;
  state.scrollToSession = -1;
  const float bottom = ImGui::GetCursorPosY(), viewTop = ImGui::GetScrollY();
  const float viewBottom = viewTop + ImGui::GetWindowHeight();
  if (top < viewTop || (bottom > viewBottom && top > viewTop)) {
    ImGui::SetScrollY(std::max(0.0f, top - ImGui::GetStyle().WindowPadding.y));  // the first: scrolled to 0
  }
}

// The wheel zooms the timelines, so it does not scroll them: PageUp / PageDown and the scrollbar do.
void scrollByPage(AppState& state) {
  if (!ImGui::GetIO().WantTextInput && ImGui::GetScrollMaxY() > 0) {
    const float page = ImGui::GetWindowHeight() * 0.9f;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) ImGui::SetScrollY(ImGui::GetScrollY() + page);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) ImGui::SetScrollY(ImGui::GetScrollY() - page);
  }
  state.timelinesScroll = ImGui::GetScrollMaxY() > 0;
  state.timelinesScrollY = ImGui::GetScrollY();
}

// Where the runs will be drawn, before there is one: the ways in (ui/front_door.h).
void drawNothingYet(AppState& state, EngineControl* engine, const RunChecks& checks) {
  if (state.lesson.active && state.lesson.predictFirst && !state.lesson.locked) {
    ImGui::TextDisabled(
        "Answer the lesson's questions above, then Lock in: its runs start then, and your answers are\n"
        "scored against what they measure.");
    return;
  }
  if (!engine || state.viewOnly || state.lesson.active || engine->busy()) {
    ImGui::TextDisabled("%s", state.nothingYet.c_str());
    return;
  }
  state.doorAction = drawFrontDoor(state, checks.problem, checks.compareProblem);
  if (state.doorAction == ConfigAction::Compare) state.doorRuns = checks.compareRuns;
}

// The tabs' share of the height below the timelines. Saved summaries and Flight Recorder dumps have
// no timelines: their figures get the room.
float bottomTabsHeight(const AppState& state, const std::vector<Session>& sessions) {
  bool onlySummaries = !sessions.empty();
  for (const auto& s : sessions) onlySummaries &= s.fromSummary || (s.collectiveLogs && s.recording.ranks() == 0);
  const float avail = ImGui::GetContentRegionAvail().y;
  if (onlySummaries) return avail - px(40.0f) * static_cast<float>(sessions.size()) - px(16.0f);
  return std::max(avail * (state.estimateShown || state.holdingsShown || state.scheduleShown ? 0.5f : 0.34f),
                  px(180.0f));
}

// The frame's one window, over the whole viewport: the panes are laid out inside it.
void beginAppWindow() {
  ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  ImGui::Begin("shardscope", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
}

// This frame's playhead, moved by --at, the keys and playing, and the transport bar above the
// timelines (drawn here). Its time from the sessions' origin.
double movePlayhead(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, double duration) {
  applyPendingPlayhead(state, engine);
  handlePlayheadKeys(state, sessions, engine, duration);
  advancePlayhead(state.playhead, ImGui::GetIO().DeltaTime, duration);
  if (state.playhead.playing) {
    // The axis is the drawn one: a diff's A is drawn shifted (last frame's alignment).
    const auto& shifts = state.alignment.shiftNs;
    const auto session = static_cast<size_t>(std::max(0, state.playhead.session));
    keepInView(state.axis, state.playhead.tNs - (session < shifts.size() ? shifts[session] : 0.0));
  }
  drawTransportBar(state, sessions, engine, duration);
  return playheadTime(state, duration);
}

// A diff session while the Diff tab is in front with two timelines (A and B) open: the sessions
// lined up and each one's playhead (ui/diff_alignment.h), and what B's lanes mark.
void alignDiffSession(AppState& state, const std::vector<Session>& sessions, double playheadNs) {
  const bool diff = state.shownTab == "diff" && sessions.size() >= 2 && !sessions[0].fromSummary &&
                    !sessions[1].fromSummary && state.marks.size() == sessions.size();
  state.alignment = alignSessions(state.marks, state.playhead.session, playheadNs, diff);
  state.diffOverlay = DiffOverlay{};
  if (!diff) return;
  state.diffOverlay.baseline = &sessions[0].recording;
  state.diffOverlay.baselineShiftNs = state.alignment.shiftNs[0];
  state.diffOverlay.difference = state.display.diffDifference;
  if (state.diff.error.empty()) state.diffOverlay.marks = &state.diff.diff.marks;
}

// Above the timelines in focus mode: the session in focus, and how to see them all again.
void drawFocusLine(const AppState& state, const std::vector<Session>& sessions) {
  ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "FOCUS: %s",
                     sessions[static_cast<size_t>(state.display.focusSession)].title.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("(F or Esc: every session, the panels and the tabs)");
}

// One session in the timelines pane: its header, then its timeline (a summary has none: a note
// says so), scrolled into view if a lesson asked. `cursor`: the mouse on its timeline, if there.
void drawSessionEntry(AppState& state, const Session& s, int index, double memoryScale, double playheadNs,
                      TimelineCursor& cursor, TimelineFrameStats& frameStats) {
  ImGui::PushID(index);
  const float top = ImGui::GetCursorPosY();
  drawSessionHeader(s);
  if (s.fromSummary) {
    ImGui::TextDisabled("a summary holds figures, not a timeline: open the run's --trace file to see it");
  } else {
    drawSessionTimeline(state, s, index, memoryScale, playheadNs, cursor, frameStats);
  }
  ImGui::Separator();
  bringIntoView(state, index, top);
  ImGui::PopID();
}

// The timelines pane, `height` high as ImGui's BeginChild takes it: every session stacked, or only
// the one in focus; the first screen while there is none. The session the mouse is over, or -1.
int drawTimelinesPane(AppState& state, const std::vector<Session>& sessions, EngineControl* engine,
                      const RunChecks& checks, const std::vector<double>& memoryScale, double playheadNs, bool focused,
                      float height, TimelineFrameStats& frameStats) {
  // The wheel zooms the timelines, so it does not scroll them: PageUp / PageDown and the scrollbar do.
  ImGui::BeginChild("timelines", ImVec2(0, height), true, ImGuiWindowFlags_NoScrollWithMouse);
  scrollByPage(state);
  if (sessions.empty()) drawNothingYet(state, engine, checks);
  std::vector<size_t> shown;
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (!focused || static_cast<int>(i) == state.display.focusSession) shown.push_back(i);
  }
  // Lanes share the height: a projector shows the memory areas as large as they can be.
  state.style.spanLaneHeight = ImGui::GetFontSize() + px(5);
  state.style.memoryLaneHeight = fittedMemoryLaneHeight(sessions, shown, state, ImGui::GetContentRegionAvail().y);
  state.lastMemoryLaneHeight = state.style.memoryLaneHeight;
  TimelineCursor cursor;
  int cursorSession = -1;
  for (size_t i : shown) {
    TimelineCursor c;
    const double own = i < state.alignment.playheadNs.size() ? state.alignment.playheadNs[i] : playheadNs;
    drawSessionEntry(state, sessions[i], static_cast<int>(i), memoryScale[i], own, c, frameStats);
    if (c.valid) {
      cursor = c;
      cursorSession = static_cast<int>(i);
    }
  }
  if (cursor.valid) state.cursor = cursor;
  ImGui::EndChild();
  return cursorSession;
}

}  // namespace

void drawAppFrame(AppState& state, SessionStore& store, EngineControl* engine) {
  const auto frameStart = std::chrono::steady_clock::now();
  beginAppWindow();
  const int sessionCount = handleFrameInput(state, store, engine);
  bool focused = state.display.focusSession >= 0;

  // Once a frame: the sidebar's Run and Compare and the first screen's both show them.
  const RunChecks checks = engine && !state.viewOnly ? runChecks(state, *engine) : RunChecks{};

  // --- left: configuration (hidden while one session is in focus) --------------------------------
  if (!focused) {
    drawSidebar(state, engine, sessionCount, checks);
    ImGui::SameLine();
  }

  // --- middle and bottom: timelines, breakdown, comparison ----------------------------------------
  ImGui::BeginGroup();
  auto lock = store.lock();
  auto& sessions = store.sessions();
  if (state.display.focusSession >= static_cast<int>(sessions.size())) {  // Run cleared the sessions
    state.display.focusSession = -1;
    focused = false;
  }
  const double duration = fitTimeAxis(state, sessions);
  const std::vector<double> memoryScale = memoryScales(sessions, state.style, state.display.ownMemoryScale);
  state.lastMemoryScales = memoryScale;
  refreshDerived(state, store, sessions);
  const double playheadNs = movePlayhead(state, sessions, engine, duration);
  alignDiffSession(state, sessions, playheadNs);

  const float bottomHeight = focused ? 0.0f : bottomTabsHeight(state, sessions);
  drawLessonBar(state, sessions, engine, !(engine && engine->busy()));
  if (focused) drawFocusLine(state, sessions);
  TimelineFrameStats frameStats;
  const int cursorSession = drawTimelinesPane(state, sessions, engine, checks, memoryScale, playheadNs, focused,
                                              focused ? 0.0f : -bottomHeight, frameStats);

  if (!focused) drawBottomTabs(state, store, sessions, cursorSession, playheadNs);
  ImGui::EndGroup();
  ImGui::End();
  state.lastStats = frameStats;
  state.lastFrameBuildMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frameStart).count();
}

}  // namespace shardscope::ui
