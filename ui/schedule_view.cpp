#include "ui/schedule_view.h"

#include <algorithm>
#include <cmath>

#include <imgui.h>

#include "config/pipeline_config.h"
#include "ui/item_probe.h"
#include "ui/pipeline_lanes.h"
#include "ui/theme.h"
#include "ui/timeline_style.h"

namespace shardscope::ui {

namespace {

using config::PipeActionKind;

const char* kindWord(PipeActionKind kind) {
  switch (kind) {
    case PipeActionKind::Forward:
      return "forward";
    case PipeActionKind::Backward:
      return "backward";
    case PipeActionKind::BackwardInput:
      return "backward for the input (I)";
    case PipeActionKind::BackwardWeight:
      return "backward for the weights (W)";
    default:
      return "transfer";
  }
}

struct Geometry {
  float x0 = 0, width = 0;  // the plot
  double secondsWide = 1;
  float x(double seconds) const { return x0 + static_cast<float>(seconds / secondsWide) * width; }
};

// A lane of cells over hatching (the bubble), each labelled where it fits; hovered, its tooltip.
void drawCells(ImDrawList* dl, const Geometry& g, float y, float h, const std::vector<ScheduleCell>& cells,
               double laneSeconds, bool planned, int rank) {
  drawHatch(dl, g.x(0), g.x(laneSeconds), y, h);
  const ImVec2 mouse = ImGui::GetMousePos();
  for (const ScheduleCell& c : cells) {
    const ImVec2 a(g.x(c.begin), y), b(std::max(g.x(c.end), g.x(c.begin) + 1.0f), y + h);
    dl->AddRectFilled(a, b, actionColor(c.action, planned));
    if (c.action.kind == PipeActionKind::BackwardWeight) dl->AddRect(a, b, IM_COL32(255, 255, 255, 120));
    const std::string text = config::actionText(c.action);
    if (!planned && ImGui::CalcTextSize(text.c_str()).x + px(4) < b.x - a.x) {
      dl->AddText(ImVec2(a.x + px(2), y + (h - ImGui::GetTextLineHeight()) / 2), IM_COL32(15, 15, 20, 255),
                  text.c_str());
    }
    if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
      ImGui::SetTooltip("rank %d, %s: stage %d, micro-batch %d, %s\n%s %s", rank, text.c_str(), c.action.stage,
                        c.action.microBatch, kindWord(c.action.kind), planned ? "planned" : "computed",
                        formatDuration((c.end - c.begin) * 1e9).c_str());
    }
  }
}

// Micro-batches held over the step: a step line, its most labelled.
void drawHeld(ImDrawList* dl, const Geometry& g, float y, float h, const ScheduleRow& row, int most,
              double laneSeconds) {
  dl->AddRectFilled(ImVec2(g.x(0), y), ImVec2(g.x(laneSeconds), y + h), IM_COL32(255, 255, 255, 10));
  int peak = 0;
  for (size_t i = 0; i < row.held.size(); ++i) {
    const double until = i + 1 < row.held.size() ? row.held[i + 1].first : laneSeconds;
    const float top = y + h - h * static_cast<float>(row.held[i].second) / static_cast<float>(std::max(most, 1));
    dl->AddRectFilled(ImVec2(g.x(row.held[i].first), top), ImVec2(g.x(until), y + h),
                      roleColor(trace::MemoryRole::Activation));
    peak = std::max(peak, row.held[i].second);
  }
  const std::string text = "activations of " + std::to_string(peak) + " micro-batch" + (peak == 1 ? "" : "es");
  dl->AddText(ImVec2(g.x(laneSeconds) + px(4), y + (h - ImGui::GetTextLineHeight()) / 2), IM_COL32(200, 200, 210, 200),
              text.c_str());
}

// A send as an arrow from where it was issued to where its receive completed; hovered, its label
// and bytes.
void drawArrow(ImDrawList* dl, ImVec2 from, ImVec2 to, const ScheduleArrow& arrow) {
  const ImU32 color = IM_COL32(120, 200, 255, 230);
  dl->AddLine(from, to, color, px(1.5f));
  const float dx = to.x - from.x, dy = to.y - from.y, len = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
  const float ux = dx / len, uy = dy / len, s = px(7.0f);
  dl->AddTriangleFilled(to, ImVec2(to.x - ux * s - uy * s * 0.5f, to.y - uy * s + ux * s * 0.5f),
                        ImVec2(to.x - ux * s + uy * s * 0.5f, to.y - uy * s - ux * s * 0.5f), color);
  const ImVec2 m = ImGui::GetMousePos();
  const float along = std::clamp(((m.x - from.x) * ux + (m.y - from.y) * uy), 0.0f, len);
  const float offX = m.x - (from.x + ux * along), offY = m.y - (from.y + uy * along);
  if (offX * offX + offY * offY < px(4) * px(4) && ImGui::IsWindowHovered()) {
    ImGui::SetTooltip("send %s: %s, issued to received %s", arrow.label.c_str(),
                      arrow.bytes > 0 ? formatBytes(static_cast<double>(arrow.bytes)).c_str() : "bytes not recorded",
                      formatDuration((arrow.received - arrow.sent) * 1e9).c_str());
  }
}

// "sends of 32.0 KiB each" where every send was that size, else where to find each one's; for a
// PyTorch job's, how they were paired, and what was left out.
std::string arrowsNote(const ScheduleFrame& f) {
  std::string left;
  if (f.unpairedSends > 0) {
    left = std::to_string(f.unpairedSends) +
           " transfers not drawn (a rank's sends or receives not one for each output or input its forwards and "
           "backwards pass on)";
  }
  if (f.arrows.empty()) return left.empty() ? "no sends in this step" : left;
  const auto& arrows = f.arrows;
  const bool same =
      std::all_of(arrows.begin(), arrows.end(), [&](const auto& a) { return a.bytes == arrows[0].bytes; });
  std::string text = same && arrows[0].bytes > 0
                         ? "sends of " + formatBytes(static_cast<double>(arrows[0].bytes)) + " each"
                         : "sends (hover one for its bytes)";
  if (f.arrowsFromSends) {
    text +=
        ", each of the trace's sends to the receive that took it, both named as the runtime named them or by the "
        "order each rank ran its forwards, backwards, sends and receives in";
  }
  return left.empty() ? text : text + "; " + left;
}

// "F 76.5 us, B 98.7 us", with I and W where the schedule splits backwards.
std::string durationsText(const ScheduleFrame& f, config::PipelineSchedule schedule) {
  std::string text =
      "F " + formatDuration(f.durations.forward * 1e9) + ", B " + formatDuration(f.durations.backward * 1e9);
  if (config::splitsBackward(schedule)) {
    text += ", I " + formatDuration(f.durations.backwardInput * 1e9) + ", W " +
            formatDuration(f.durations.backwardWeight * 1e9);
  }
  return text;
}

}  // namespace

namespace {

struct RowHeights {
  float measured = px(24), planned = px(12), held = px(14), gap = px(10);
  float total() const { return measured + planned + held + gap + px(4); }
};

// Beside a rank: its bubble in this step, measured against planned, and the closed form's share.
void drawRowFigures(const ScheduleFrame& f, const ScheduleRow& row, float x, float y) {
  const double measuredShare = f.seconds > 0 ? row.bubbleSeconds / f.seconds : 0;
  const double plannedShare = f.plannedSeconds > 0 ? row.plannedBubbleSeconds / f.plannedSeconds : 0;
  ImGui::SetCursorScreenPos(ImVec2(x, y));
  ImGui::Text("bubble %s (%.0f%%)", formatDuration(row.bubbleSeconds * 1e9).c_str(), 100 * measuredShare);
  ImGui::SetCursorScreenPos(ImVec2(x, y + ImGui::GetTextLineHeightWithSpacing()));
  ImGui::TextDisabled("planned %s (%.0f%%), form %.0f%%", formatDuration(row.plannedBubbleSeconds * 1e9).c_str(),
                      100 * plannedShare, 100 * f.closedFormShare);
}

void drawFrame(const ScheduleFrame& f, double playheadNs, int64_t originNs) {
  const RowHeights h;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float labelWidth = px(150), figuresWidth = px(250);
  Geometry g;
  g.x0 = origin.x + labelWidth;
  g.width = std::max(px(100), ImGui::GetContentRegionAvail().x - labelWidth - figuresWidth);
  g.secondsWide = std::max({f.seconds, f.plannedSeconds, 1e-9});
  ImDrawList* dl = ImGui::GetWindowDrawList();
  int most = 1;
  for (const auto& row : f.rows) {
    for (const auto& held : row.held) most = std::max(most, held.second);
  }
  for (size_t i = 0; i < f.rows.size(); ++i) {
    const ScheduleRow& row = f.rows[i];
    const float y = origin.y + h.total() * static_cast<float>(i);
    dl->AddText(ImVec2(origin.x, y + px(4)), IM_COL32(220, 220, 225, 255), row.label.c_str());
    drawCells(dl, g, y, h.measured, row.measured, f.seconds, false, row.rank);
    drawCells(dl, g, y + h.measured + px(2), h.planned, row.planned, f.plannedSeconds, true, row.rank);
    drawHeld(dl, g, y + h.measured + h.planned + px(4), h.held, row, most, f.seconds);
    drawRowFigures(f, row, g.x0 + g.width + px(8), y);
  }
  const auto rowY = [&](int row) { return origin.y + h.total() * static_cast<float>(row); };
  for (const auto& a : f.arrows) {
    const bool down = a.toRow > a.fromRow;
    const ImVec2 from(g.x(a.sent), rowY(a.fromRow) + (down ? h.measured : 0));
    const ImVec2 to(g.x(a.received), rowY(a.toRow) + (down ? 0 : h.measured));
    drawArrow(dl, from, to, a);
  }
  const double at = (playheadNs + static_cast<double>(originNs - f.stepBeginNs)) / 1e9;
  if (at >= 0 && at <= f.seconds) {
    dl->AddLine(ImVec2(g.x(at), origin.y), ImVec2(g.x(at), rowY(static_cast<int>(f.rows.size()))),
                IM_COL32(255, 220, 90, 235), px(2));
  }
  ImGui::Dummy(ImVec2(labelWidth + g.width + figuresWidth, h.total() * static_cast<float>(f.rows.size())));
}

// The sessions that ran a pipeline, and a button for each where there are several.
int chooseSession(ScheduleViewState& state, const std::vector<Session>& sessions) {
  std::vector<int> pipelined;
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (sessions[i].config.pp > 1 && !sessions[i].fromSummary) pipelined.push_back(static_cast<int>(i));
  }
  if (pipelined.empty()) return -1;
  if (std::find(pipelined.begin(), pipelined.end(), state.session) == pipelined.end()) state.session = pipelined[0];
  if (pipelined.size() > 1) {
    for (int i : pipelined) {
      if (ImGui::RadioButton(sessions[static_cast<size_t>(i)].title.c_str(), state.session == i)) state.session = i;
      ImGui::SameLine();
    }
    ImGui::NewLine();
  }
  return state.session;
}

}  // namespace

void drawScheduleTab(ScheduleViewState& state, const std::vector<Session>& sessions,
                     const std::vector<PipelineLanes>& lanes, uint64_t storeVersion, double playheadNs,
                     int playheadSession) {
  const int before = state.session;
  if (playheadSession != state.followed) {  // the playhead moved to another run: show its schedule
    state.followed = playheadSession;
    if (playheadSession >= 0) state.session = playheadSession;
  }
  const int index = chooseSession(state, sessions);
  if (index < 0) {
    ImGui::TextWrapped(
        "No pipeline here: run with --pp 2 or more (Parallelism in the sidebar), or compare "
        "--schedules gpipe,1f1b, to see each rank's schedule against its run.");
    return;
  }
  const Session& s = sessions[static_cast<size_t>(index)];
  static const std::vector<std::vector<stats::MeasuredAction>> none;
  const auto& actions = static_cast<size_t>(index) < lanes.size() ? lanes[static_cast<size_t>(index)].actions : none;
  if (index != before || index != state.frameOf || storeVersion != state.version) {
    state.frameOf = index;
    state.version = storeVersion;
    state.frame = scheduleFrameOf(s, actions, scheduleStepAt(s, actions, playheadNs));
  } else if (const int32_t step = scheduleStepAt(s, actions, playheadNs); step != state.frame.step) {
    state.frame = scheduleFrameOf(s, actions, step);
  }
  const ScheduleFrame& f = state.frame;
  if (!f.error.empty()) {
    ImGui::TextWrapped("%s", f.error.c_str());
    return;
  }
  const auto shape = config::pipelineShapeOf(s.config);
  ImGui::Text("%s: step %d, %s, P = %d, V = %d, M = %d", s.title.c_str(), f.step, config::modeName(shape.schedule),
              shape.ranks, shape.stagesPerRank, shape.microBatches);
  wrappedHint(
      "Each rank: its actions as measured (width: compute time), the plan below (the schedule laid out "
      "with this run's mean %s and no waiting), the micro-batches whose activations it holds. Hatched: no "
      "forward or backward running (the bubble). Arrows: %s. Closed form %s: a PREDICTION.",
      durationsText(f, shape.schedule).c_str(), arrowsNote(f).c_str(), f.closedForm.c_str());
  noteItem("schedule:frame");
  if (!f.sharedDevice.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.86f, 0.35f, 1.0f));
    ImGui::TextWrapped("%s", f.sharedDevice.c_str());
    ImGui::PopStyleColor();
  }
  drawFrame(f, playheadNs, s.recording.originNs());
}

}  // namespace shardscope::ui
