#include "ui/step_through.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "trace/ring_schedule.h"
#include "ui/item_probe.h"
#include "ui/holdings_view.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

const std::vector<EventGroupMark>* marksOf(const AppState& state, int session) {
  if (session < 0 || static_cast<size_t>(session) >= state.marks.size()) return nullptr;
  return &state.marks[static_cast<size_t>(session)];
}

// A live run waiting at its step gate, whose Step the arrows and buttons press; or nullptr.
const Session* gatedSession(const std::vector<Session>& sessions) {
  for (const auto& s : sessions) {
    if (s.gate.gated && s.status != SessionStatus::Done && s.status != SessionStatus::Failed) return &s;
  }
  return nullptr;
}

void stepForward(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, double durationNs) {
  Playhead& p = state.playhead;
  p.playing = false;
  // At the live edge of a gated run, the next group has not happened yet: release the ranks.
  if (!p.placed && engine && gatedSession(sessions)) {
    engine->stepGate();
    return;
  }
  if (const auto* marks = marksOf(state, p.session)) {
    const double now = playheadTime(state, durationNs);
    p.tNs = nextGroupTime(*marks, now);
    p.placed = true;
  }
}

void stepBack(AppState& state, double durationNs) {
  Playhead& p = state.playhead;
  p.playing = false;
  if (const auto* marks = marksOf(state, p.session)) {
    p.tNs = previousGroupTime(*marks, playheadTime(state, durationNs));
    p.placed = true;
  }
}

void togglePlay(Playhead& p, double startNs, double durationNs) {
  if (p.playing) {
    p.playing = false;
    return;
  }
  // From the start, as a player does at the end (the start of the detail a long run kept).
  if (!p.placed || p.tNs >= durationNs) p.tNs = startNs;
  p.placed = true;
  p.playing = true;
}

bool keyPressed(ImGuiKey key) {
  const int index = ImGui::GetKeyIndex(key);
  return index >= 0 && ImGui::IsKeyPressed(index);
}

// The collective the ring animates: the one the user clicked, else the one rank 0 has in flight at
// the playhead, else the one whose issue is the event group the playhead is on.
const trace::CollectiveSpan* activeCollective(const AppState& state, const Session& s, double tNs) {
  const auto& rec = s.recording;
  if (rec.ranks() == 0 || rec.originNs() == INT64_MAX) return nullptr;
  const auto& t = rec.rank(0);
  const double tAbs = tNs + static_cast<double>(rec.originNs());
  if (state.selection.active) {
    for (const auto& c : t.collectives) {
      if (c.op == state.selection.op && c.step == state.selection.step && c.phase == state.selection.phase &&
          c.microBatch == state.selection.microBatch && c.text() == state.selection.unit) {
        return &c;
      }
    }
  }
  // Spans are sorted by begin: only those begun within the longest span's reach can be in flight.
  const trace::CollectiveSpan* inFlight = nullptr;
  for (size_t i = trace::firstSpanFrom(t.collectives, tAbs - static_cast<double>(t.longestCollective));
       i < t.collectives.size() && t.collectives[i].beginNs <= tAbs; ++i) {
    const trace::CollectiveSpan& c = t.collectives[i];
    if (c.endNs >= tAbs && c.op != static_cast<uint8_t>(trace::CollectiveOp::Barrier)) inFlight = &c;
  }
  if (inFlight) return inFlight;
  const auto* marks = marksOf(state, state.playhead.session);
  if (!marks) return nullptr;
  const int k = groupAtOrBefore(*marks, tNs);
  if (k < 0 || (*marks)[static_cast<size_t>(k)].kind != trace::GroupKind::Collective ||
      static_cast<size_t>(k) >= t.groups.size()) {
    return nullptr;
  }
  // The first collective issued at or after the group began (issued no later than it started).
  const trace::GroupSpan& group = t.groups[static_cast<size_t>(k)];
  for (size_t i = trace::firstSpanFrom(t.collectives, static_cast<double>(group.beginNs)); i < t.collectives.size();
       ++i) {
    const trace::CollectiveSpan& c = t.collectives[i];
    if (c.issueNs >= group.beginNs) return c.step == group.step ? &c : nullptr;
  }
  return nullptr;
}

}  // namespace

double playheadTime(const AppState& state, double durationNs) {
  return state.playhead.placed ? std::min(state.playhead.tNs, durationNs) : durationNs;
}

void handlePlayheadKeys(AppState& state, const std::vector<Session>& sessions, EngineControl* engine,
                        double durationNs) {
  if (ImGui::GetIO().WantTextInput) return;
  Playhead& p = state.playhead;
  if (keyPressed(ImGuiKey_Space)) togglePlay(p, state.detailStartNs, durationNs);
  if (keyPressed(ImGuiKey_RightArrow)) stepForward(state, sessions, engine, durationNs);
  if (keyPressed(ImGuiKey_LeftArrow)) stepBack(state, durationNs);
  if (keyPressed(ImGuiKey_Home)) {
    p = Playhead{state.detailStartNs, true, false, p.speed, p.session};
  }
  if (keyPressed(ImGuiKey_End)) {
    p.placed = false;
    p.playing = false;
  }
}

void drawTransportBar(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, double durationNs) {
  Playhead& p = state.playhead;
  const double now = playheadTime(state, durationNs);
  if (ImGui::Button("|<")) p = Playhead{state.detailStartNs, true, false, p.speed, p.session};
  noteItem("play:start");
  ImGui::SameLine();
  if (ImGui::Button("< group")) stepBack(state, durationNs);
  noteItem("play:back");
  ImGui::SameLine();
  if (ImGui::Button(p.playing ? "Pause" : "Play ", ImVec2(px(54), 0))) togglePlay(p, state.detailStartNs, durationNs);
  noteItem("play:toggle");
  ImGui::SameLine();
  if (ImGui::Button("group >")) stepForward(state, sessions, engine, durationNs);
  noteItem("play:forward");
  ImGui::SameLine();
  if (ImGui::Button(">|")) {
    p.placed = false;
    p.playing = false;
  }
  noteItem("play:end");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(px(150));
  float speed = static_cast<float>(p.speed);
  if (ImGui::SliderFloat("##speed", &speed, static_cast<float>(kMinPlaySpeed), static_cast<float>(kMaxPlaySpeed),
                         "%.2fx real time", ImGuiSliderFlags_Logarithmic)) {
    p.speed = speed;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("playback speed: 0.01x (a 50 ms step takes 5 s) to 1x the run's own time");
  ImGui::SameLine();
  const auto* marks = marksOf(state, p.session);
  const int k = marks ? groupAtOrBefore(*marks, now) : -1;
  char where[160];
  if (k >= 0) {
    const auto& m = (*marks)[static_cast<size_t>(k)];
    std::snprintf(where, sizeof where, "%s   group %d/%zu: %s (step %d)", formatDuration(now).c_str(), k + 1,
                  marks->size(), m.label().c_str(), m.step);
  } else {
    std::snprintf(where, sizeof where, "%s", formatDuration(now).c_str());
  }
  ImGui::TextUnformatted(where);
  if (const Session* gated = gatedSession(sessions)) {
    ImGui::SameLine(0, 30);
    if (gated->gate.allWaiting()) {
      ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "PAUSED: all %d ranks wait before %s (step %d)",
                         gated->gate.ranks, gated->gate.next.c_str(), gated->gate.step);
    } else {
      ImGui::TextDisabled("running to the next gate (%d of %d ranks there)", gated->gate.waiting, gated->gate.ranks);
    }
    ImGui::SameLine();
    ImGui::BeginDisabled(!engine);
    if (ImGui::Button("Step")) {
      if (engine) engine->stepGate();
      p.placed = false;  // follow the ranks
    }
    noteItem("gate:step");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("release every rank for one event group (Right arrow at the live edge)");
    ImGui::SameLine();
    if (ImGui::Button("Continue") && engine) engine->continueGate();
    noteItem("gate:continue");
    ImGui::EndDisabled();
  }
}

void drawHoldingsTab(AppState& state, const std::vector<Session>& sessions, double playheadNs) {
  state.ringShown = false;
  state.ringCollective.clear();
  const int index = std::clamp(state.playhead.session, 0, static_cast<int>(sessions.size()) - 1);
  if (sessions.empty() || sessions[static_cast<size_t>(index)].fromSummary) {
    ImGui::TextDisabled("Who holds what needs a recorded run: press Run, or open a trace.");
    return;
  }
  const Session& s = sessions[static_cast<size_t>(index)];
  const trace::CollectiveSpan* collective = activeCollective(state, s, playheadNs);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gridWidth = collective ? avail.x * 0.58f : avail.x;
  ImGui::BeginChild("holdings", ImVec2(gridWidth, 0), false);
  ImGui::TextWrapped("%s at %s: what each rank holds of each unit, measured (hover a cell for bytes)", s.title.c_str(),
                     formatDuration(playheadNs).c_str());
  wrappedHint(recordsHostMemoryPerUnit(s.recording)
                  ? "model states by role (buffers, activations: the lanes above); host rows: --offload cpu, own scale"
              : recordsHostMemory(s.recording)
                  ? "model states by role (buffers, activations: the lanes above); the host's memory is in its "
                    "lane above, not per unit (a trace from before unit host memory was recorded)"
                  : "model states by role; collective buffers and activations are in the lanes above");
  const PipelineLanes* lanes = static_cast<size_t>(index) < state.pipelineLanes.size() &&
                                       !state.pipelineLanes[static_cast<size_t>(index)].actions.empty()
                                   ? &state.pipelineLanes[static_cast<size_t>(index)]
                                   : nullptr;
  drawHoldings(s, playheadNs, ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y, &state.lastHoldings,
               lanes);
  ImGui::EndChild();
  if (!collective) return;
  ImGui::SameLine();
  ImGui::BeginChild("ring", ImVec2(0, 0), true);
  // Within the recorded span the playhead drives the steps (spread evenly over the measured
  // time); elsewhere the collective replays at one step a second.
  const auto schedule = trace::ringSchedule(static_cast<trace::CollectiveOp>(collective->op), collective->worldSize,
                                            trace::collectiveSizeBytes(*collective));
  const double steps = static_cast<double>(schedule.steps.size());
  const double tAbs = playheadNs + static_cast<double>(s.recording.originNs());
  double progress;
  std::string timing;
  if (tAbs >= collective->beginNs && tAbs <= collective->endNs && collective->endNs > collective->beginNs) {
    progress = (tAbs - collective->beginNs) / static_cast<double>(collective->endNs - collective->beginNs) * steps;
    timing = "the playhead inside the measured span on rank 0 (" +
             formatDuration(static_cast<double>(collective->endNs - collective->beginNs)) +
             "), the steps as equal parts of it";
  } else {
    progress = std::fmod(ImGui::GetTime(), steps + 1.5);
    timing = "a replay at one step a second (put the playhead inside the span to follow its measured time)";
  }
  drawRingAnimation(*collective, /*rank=*/0, s.recording.ranks(), s.recording.tensorRanks(), s.device, progress, timing,
                    ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y, &state.lastRing);
  ImGui::EndChild();
  state.ringShown = true;
  state.ringCollective = std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(collective->op))) + " " +
                         trace::collectiveUnit(*collective) + ", step " + std::to_string(collective->step);
}

}  // namespace shardscope::ui
