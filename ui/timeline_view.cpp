#include "ui/timeline_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ui/theme.h"
#include "ui/timeline_lanes.h"

namespace shardscope::ui {

trace::RoleBytes memoryAt(const trace::RunRecording& rec, int rank, double tNs) {
  return rec.rank(rank).memory.bytesAt(tNs + static_cast<double>(rec.originNs()));
}

float drawTimeline(const char* id, const trace::RunRecording& rec, TimeAxis& axis,
                   double memoryScaleBytes, float width, const TimelineStyle& style,
                   CollectiveSelection& selection, TimelineCursor& cursor,
                   TimelineFrameStats* stats, double playheadNs) {
  ImGui::PushID(id);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  LaneFrame frame;
  frame.drawList = ImGui::GetWindowDrawList();
  frame.axis = &axis;
  frame.x0 = origin.x + timelineLabelWidth();
  frame.width = std::max(width - timelineLabelWidth(), 10.0f);
  frame.originNs = rec.originNs() == INT64_MAX ? 0.0 : static_cast<double>(rec.originNs());
  frame.beginAbs = frame.originNs + axis.beginNs;
  frame.endAbs = frame.originNs + axis.endNs;
  frame.mouse = ImGui::GetIO().MousePos;
  frame.windowHovered = ImGui::IsWindowHovered();
  ImDrawList* dl = frame.drawList;
  const float x0 = frame.x0, w = frame.width;
  const float ruler = ImGui::GetFontSize() + px(5.0f);  // the time labels above the lanes
  // A rank's lanes, top to bottom: memory, compute, comm, the exposed-comm bar in the gap below.
  const float groupHeight = style.memoryLaneHeight + 2 * style.spanLaneHeight + px(10.0f);
  const float totalHeight = groupHeight * static_cast<float>(rec.ranks()) + ruler;
  TimelineFrameStats local;

  drawTimeRuler(frame, origin.y, origin.y + totalHeight);
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    const float y0 = origin.y + ruler + groupHeight * static_cast<float>(r);
    const float computeY = y0 + style.memoryLaneHeight;
    const float commY = computeY + style.spanLaneHeight;
    char label[32];
    std::snprintf(label, sizeof label, "rank %d", r);
    dl->AddText(ImVec2(origin.x + 4, y0 + 2), IM_COL32(230, 230, 235, 255), label);
    dl->AddText(ImVec2(origin.x + 4, computeY + 2), laneLabelColor(), "compute");
    dl->AddText(ImVec2(origin.x + 4, commY + 2), laneLabelColor(), "comm");
    dl->PushClipRect(ImVec2(x0, y0), ImVec2(x0 + w, y0 + groupHeight), true);
    local.memoryColumns += drawMemoryLane(frame, t, y0, style.memoryLaneHeight, memoryScaleBytes, style);
    drawSpanLane(frame, t, SpanLaneKind::Compute, computeY, style, selection, local);
    drawSpanLane(frame, t, SpanLaneKind::Collectives, commY, style, selection, local);
    drawExposedCommLane(frame, rec.exposedCommCached(r), commY + style.spanLaneHeight);
    drawPauses(frame, t.pauses, computeY, 2 * style.spanLaneHeight);
    drawStepMarkers(frame, t.steps, y0, groupHeight - px(8.0f));
    dl->PopClipRect();
    drawMemoryHover(frame, rec, r, y0, style.memoryLaneHeight, cursor);
  }
  drawPlayhead(frame, playheadNs, origin.y, totalHeight);

  // The time ruler places the playhead (click or drag); the rest zooms and pans.
  const ImVec2 mouse = frame.mouse;
  const bool onRuler = mouse.y >= origin.y && mouse.y < origin.y + ruler && mouse.x >= x0 && mouse.x < x0 + w;
  if (onRuler && frame.windowHovered && ImGui::IsMouseDown(0)) {
    cursor.seek = true;
    cursor.seekNs = std::max(0.0, axis.toNs(mouse.x, x0, w));
  }
  // Interaction over the whole timeline: wheel zooms around the cursor, dragging pans.
  ImGui::InvisibleButton("timeline", ImVec2(width, totalHeight));
  if (ImGui::IsItemHovered()) {
    const float wheel = ImGui::GetIO().MouseWheel;
    if (wheel != 0.0f) axis.zoom(axis.toNs(mouse.x, x0, w), wheel);
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(0, 2.0f) && !cursor.seek) {
    axis.pan(-ImGui::GetIO().MouseDelta.x / w * (axis.endNs - axis.beginNs));
  }
  if (stats) *stats = local;
  ImGui::PopID();
  return totalHeight;
}

}  // namespace shardscope::ui
