#include "ui/timeline_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ui/diff_lanes.h"
#include "ui/item_probe.h"
#include "ui/pipeline_lanes.h"
#include "ui/memory_columns.h"
#include "ui/rank_rows.h"
#include "ui/theme.h"
#include "ui/timeline_lanes.h"

namespace shardscope::ui {

bool recordsHostMemory(const trace::RunRecording& rec) {
  for (int r = 0; r < rec.ranks(); ++r) {
    if (rec.rank(r).host.peakTotal > 0) return true;
  }
  return false;
}

bool recordsMemory(const trace::RunRecording& rec) {
  for (int r = 0; r < rec.ranks(); ++r) {
    if (!rec.rank(r).memory.empty()) return true;
  }
  return false;
}

float hostLaneHeight(const trace::RunRecording& rec, const TimelineStyle& style) {
  return recordsHostMemory(rec) ? std::round(style.memoryLaneHeight * kHostLaneShare) : 0.0f;
}

double hostMemoryScaleBytes(const trace::RunRecording& rec) {
  int64_t peak = 0;
  for (int r = 0; r < rec.ranks(); ++r) peak = std::max(peak, rec.rank(r).host.peakTotal);
  return static_cast<double>(peak) * 1.1;
}

SessionWaits sessionWaits(const trace::RunRecording& recording) {
  SessionWaits out;
  out.byRank = stats::collectiveWaits(recording);
  for (auto& waits : out.byRank) {
    std::sort(waits.begin(), waits.end(),
              [](const stats::CollectiveWait& a, const stats::CollectiveWait& b) { return a.issuedNs < b.issuedNs; });
    for (const auto& w : waits) out.longestNs = std::max(out.longestNs, w.lastIssuedNs - w.issuedNs);
  }
  return out;
}

namespace {

std::string rankRange(const RankRow& row) {
  return std::to_string(row.groupFirst) + "-" + std::to_string(row.groupFirst + row.groupCount - 1);
}

// The label column of a row: its rank, and for grouped ranks the handle that folds or expands the
// group (a click on the label).
void drawRowLabel(const LaneFrame& frame, const RankRow& row, float x, float y, float height, std::set<int>* expanded) {
  ImDrawList* dl = frame.drawList;
  const ImU32 rankColor = IM_COL32(230, 230, 235, 255);
  const float line = ImGui::GetFontSize();
  char label[48];
  if (row.folded) {
    std::snprintf(label, sizeof label, "+ %s", rankRange(row).c_str());
    dl->AddText(ImVec2(x + 4, y + 2), IM_COL32(150, 200, 255, 255), label);
    std::snprintf(label, sizeof label, "rank %d", row.rank);
    dl->AddText(ImVec2(x + 4, y + 2 + line), rankColor, label);
  } else {
    std::snprintf(label, sizeof label, "rank %d", row.rank);
    dl->AddText(ImVec2(x + 4, y + 2), rankColor, label);
    if (row.groupHead) {
      std::snprintf(label, sizeof label, "- %s", rankRange(row).c_str());
      dl->AddText(ImVec2(x + 4, y + 2 + line), IM_COL32(150, 200, 255, 255), label);
    }
  }
  if (!expanded || row.group < 0 || !(row.folded || row.groupHead)) return;
  // A button of its own over the label, submitted before the timeline's: it takes the click, so
  // the timeline does not pan under it.
  ImGui::PushID(row.group);
  ImGui::SetCursorScreenPos(ImVec2(x, y));
  if (ImGui::InvisibleButton("rank group", ImVec2(std::max(frame.x0 - x, 1.0f), height))) {
    toggleRankGroup(*expanded, row.group);
  }
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(row.folded ? "click: show ranks %s one by one" : "click: fold ranks %s into one row again",
                      rankRange(row).c_str());
  }
  ImGui::PopID();
}

// What a folded row stands for: which rank it draws and why, and the span of the peaks of the
// group's ranks that recorded anything, so the ranks it hides are read as measured figures too. A
// PyTorch job's traces may be of a few ranks only; a live run's ranks may not have sent yet.
std::string foldedGroupText(const trace::RunRecording& rec, const RankRow& row) {
  const int recorded = ranksWithRecords(rec, row.groupFirst, row.groupCount);
  if (recorded == 0) return "ranks " + rankRange(row) + ": nothing recorded of them";
  int64_t low = INT64_MAX, high = 0;
  for (int r = row.groupFirst; r < row.groupFirst + row.groupCount; ++r) {
    if (!recordedAnything(rec.rank(r))) continue;
    low = std::min(low, rec.rank(r).peakTotal);
    high = std::max(high, rec.rank(r).peakTotal);
  }
  std::string text = "ranks " + rankRange(row) + " folded: rank " + std::to_string(row.rank) + " drawn";
  text += high > 0 ? " (the group's highest peak); their peaks " + formatBytes(static_cast<double>(low)) + " to " +
                         formatBytes(static_cast<double>(high))
                   : "; no memory recorded";
  if (recorded < row.groupCount) text += "; " + std::to_string(row.groupCount - recorded) + " of them recorded nothing";
  return text + "; click the label to expand";
}

// The note at the foot of the folded row's memory lane, on a box of its own: the lane's top lines
// hold the step labels, the capacity and the peak.
void drawFoldedGroupNote(const LaneFrame& frame, const trace::RunRecording& rec, const RankRow& row, float y,
                         float laneHeight) {
  const std::string text = foldedGroupText(rec, row);
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  const ImVec2 at(frame.x0 + 4, y + laneHeight - size.y - 4);
  frame.drawList->AddRectFilled(at, ImVec2(at.x + size.x + 6, at.y + size.y + 2), IM_COL32(20, 22, 28, 200));
  frame.drawList->AddText(ImVec2(at.x + 3, at.y + 1), IM_COL32(150, 200, 255, 255), text.c_str());
  if (itemProbeOn()) noteText("lane-text:folded@" + std::to_string(y) + ":" + text, at.x + 3, at.y + 1, text.c_str());
}

// A row's lanes' sizes and scales, the same for every rank of the session.
struct RowGeometry {
  float groupHeight = 0;  // memory, host (if any), compute, comm, a pipeline's two lanes, the gap below
  float hostHeight = 0;
  double hostScale = 0;
  double memoryScaleBytes = 0;
};

float rowHeight(const RankRow& row, const RowGeometry& g) {
  return row.missingRanks.empty() ? g.groupHeight : ImGui::GetFontSize() + px(8.0f);
}

// The one line for the ranks whose traces were not given (rank_rows.h): no lanes, nothing to draw.
void drawMissingRanksLine(const LaneFrame& frame, const RankRow& row, float x, float y) {
  const std::string text = "ranks " + row.missingRanks + ": no trace given";
  frame.drawList->AddText(ImVec2(x + 4, y + px(3.0f)), IM_COL32(150, 200, 255, 255), text.c_str());
  if (itemProbeOn()) noteText("lane-text:missing@" + std::to_string(y) + ":" + text, x + 4, y + px(3.0f), text.c_str());
}

// In place of a memory lane, for a job traced without memory events.
void drawMemoryNotRecorded(const LaneFrame& frame, float y) {
  const char* text = "memory not recorded (traced without profile_memory=True)";
  frame.drawList->AddText(ImVec2(frame.x0 + 4, y), laneLabelColor(), text);
  if (itemProbeOn())
    noteText(std::string("lane-text:no-memory@") + std::to_string(y) + ":" + text, frame.x0 + 4, y, text);
}

// A rank's memory lane; in a diff session, on B, A's total as an outline over it, or in its place
// the difference B - A. Counts the columns drawn into `stats`.
void drawRankMemory(const LaneFrame& frame, const trace::RunRecording& rec, int r, float y, double scaleBytes,
                    const TimelineStyle& style, TimelineFrameStats& stats) {
  const DiffOverlay* diff = style.diff;
  const bool baseline = diff && diff->baseline && r < diff->baseline->ranks();
  const float height = style.memoryLaneHeight;
  if (baseline && diff->difference) {
    stats.ghostColumns += drawMemoryDifference(frame, diff->baseline->rank(r), rec.rank(r), *diff, y, height, style);
    return;
  }
  stats.memoryColumns += drawMemoryLane(frame, rec.rank(r), y, height, scaleBytes, style);
  if (baseline)
    stats.ghostColumns += drawMemoryGhost(frame, diff->baseline->rank(r), *diff, y, height, scaleBytes, style);
}

// Between the comm lane (and its exposed bar) and a pipeline run's lanes.
float pipelineGap() { return px(5.0f); }
float pipelineLanesHeight(const TimelineStyle& style) {
  return style.pipeline ? pipelineGap() + 3 * style.spanLaneHeight : 0.0f;
}

// A pipeline run's action cells and activations held for rank `r`, from `y` down.
void drawPipelineLanes(const LaneFrame& frame, const TimelineStyle& style, int r, float labelX, float y,
                       TimelineFrameStats& stats) {
  const PipelineLanes* lanes = style.pipeline;
  if (!lanes || static_cast<size_t>(r) >= lanes->actions.size()) return;
  const float h = style.spanLaneHeight;
  frame.drawList->AddText(ImVec2(labelX + 4, y + 2), laneLabelColor(), "actions");
  frame.drawList->AddText(ImVec2(labelX + 4, y + h + 2), laneLabelColor(), "held");
  frame.drawList->PushClipRect(ImVec2(frame.x0, y), ImVec2(frame.x0 + frame.width, y + 3 * h), true);
  stats.actionCells += drawActionLane(frame, lanes->actions[static_cast<size_t>(r)], y, h);
  stats.heldSteps += drawHeldLane(frame, lanes->held[static_cast<size_t>(r)], lanes->scale, y + h, 2 * h);
  frame.drawList->PopClipRect();
}

// One rank's row: its label, memory (and host) lane, compute and comm lanes, steps and notes.
void drawRankLanes(const LaneFrame& frame, const trace::RunRecording& rec, const RankRow& rr, float labelX, float y0,
                   const RowGeometry& g, const TimelineStyle& style, CollectiveSelection& selection,
                   TimelineCursor& cursor, TimelineFrameStats& local, std::set<int>* expandedRankGroups) {
  ImDrawList* dl = frame.drawList;
  const int r = rr.rank;
  const auto& t = rec.rank(r);
  const float hostY = y0 + style.memoryLaneHeight;
  const float computeY = hostY + g.hostHeight;
  const float commY = computeY + style.spanLaneHeight;
  drawRowLabel(frame, rr, labelX, y0, style.memoryLaneHeight, expandedRankGroups);
  drawPipelineLanes(frame, style, r, labelX, commY + style.spanLaneHeight + pipelineGap(), local);
  if (g.hostHeight > 0) dl->AddText(ImVec2(labelX + 4, hostY + 2), laneLabelColor(), "host");
  dl->AddText(ImVec2(labelX + 4, computeY + 2), laneLabelColor(), "compute");
  dl->AddText(ImVec2(labelX + 4, commY + 2), laneLabelColor(), "comm");
  dl->PushClipRect(ImVec2(frame.x0, y0), ImVec2(frame.x0 + frame.width, y0 + g.groupHeight), true);
  if (style.memoryNotRecorded) {
    drawMemoryNotRecorded(frame, y0 + ImGui::GetFontSize());
  } else {
    drawRankMemory(frame, rec, r, y0, g.memoryScaleBytes, style, local);
  }
  if (g.hostHeight > 0) local.memoryColumns += drawHostMemoryLane(frame, t, hostY, g.hostHeight, g.hostScale, style);
  drawSpanLane(frame, t, SpanLaneKind::Compute, computeY, style, selection, local);
  drawSpanLane(frame, t, SpanLaneKind::Collectives, commY, style, selection, local);
  drawExposedCommLane(frame, rec.exposedCommCached(r), commY + style.spanLaneHeight);
  if (style.diff && style.diff->marks) {
    local.diffMarks += drawDiffMarks(frame, *style.diff->marks, r, commY, style.spanLaneHeight);
  }
  if (style.waits && static_cast<size_t>(r) < style.waits->byRank.size()) {
    drawWaitLane(frame, style.waits->byRank[static_cast<size_t>(r)], style.waits->longestNs, r, commY,
                 style.spanLaneHeight, local);
  }
  drawPauses(frame, t.pauses, computeY, 2 * style.spanLaneHeight);
  drawStepMarkers(frame, t.steps, y0, g.groupHeight - px(8.0f));
  if (rr.folded) drawFoldedGroupNote(frame, rec, rr, y0, style.memoryLaneHeight);
  dl->PopClipRect();
  drawMemoryHover(frame, rec, r, y0, style.memoryLaneHeight, cursor);
  if (g.hostHeight > 0) drawMemoryHover(frame, rec, r, hostY, g.hostHeight, cursor, trace::MemorySpace::Host);
}

}  // namespace

namespace {

// The memory lanes of the rows this frame draws, searched at once on every core
// (MemoryColumnCache::findAll): each lane then draws from what was found.
void findVisibleMemoryColumns(const LaneFrame& frame, const trace::RunRecording& rec, const std::vector<RankRow>& rows,
                              const RowGeometry& g, float firstY, const TimelineStyle& style) {
  if (!style.memoryColumns || style.memoryNotRecorded) return;
  const ImVec2 clipMin = frame.drawList->GetClipRectMin(), clipMax = frame.drawList->GetClipRectMax();
  std::vector<MemoryLane> lanes;
  float y0 = firstY;
  for (const RankRow& rr : rows) {
    const float y = y0, height = rowHeight(rr, g);
    y0 += height;
    if (y > clipMax.y || y + height < clipMin.y || !rr.missingRanks.empty()) continue;
    const auto& t = rec.rank(rr.rank);
    if (!t.memory.empty()) lanes.push_back({&t.memory, &t.memoryTotals});
  }
  style.memoryColumns->findAll(lanes, ColumnSpan{frame.beginAbs, frame.endAbs, static_cast<int>(frame.width)});
}

}  // namespace

float drawTimeline(const char* id, const trace::RunRecording& rec, TimeAxis& axis, double memoryScaleBytes, float width,
                   const TimelineStyle& style, CollectiveSelection& selection, TimelineCursor& cursor,
                   TimelineFrameStats* stats, double playheadNs, std::set<int>* expandedRankGroups) {
  ImGui::PushID(id);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  LaneFrame frame;
  frame.drawList = ImGui::GetWindowDrawList();
  frame.axis = &axis;
  frame.x0 = origin.x + timelineLabelWidth();
  // Whole pixels, a memory lane's column each: a drag by whole pixels then moves the columns by
  // whole columns, and those still in view are kept (ui/memory_columns.h).
  frame.width = std::floor(std::max(width - timelineLabelWidth(), 10.0f));
  frame.shiftNs = style.shiftNs;
  frame.originNs = (rec.originNs() == INT64_MAX ? 0.0 : static_cast<double>(rec.originNs())) + frame.shiftNs;
  frame.beginAbs = frame.originNs + axis.beginNs;
  frame.endAbs = frame.originNs + axis.endNs;
  frame.mouse = ImGui::GetIO().MousePos;
  frame.windowHovered = ImGui::IsWindowHovered();
  ImDrawList* dl = frame.drawList;
  const float x0 = frame.x0, w = frame.width;
  const float ruler = ImGui::GetFontSize() + px(5.0f);  // the time labels above the lanes
  // A rank's lanes, top to bottom: memory, host memory (--offload cpu only), compute, comm, the
  // exposed-comm bar in the gap below.
  const float hostHeight = hostLaneHeight(rec, style);
  const double hostScale = hostMemoryScaleBytes(rec);
  const float groupHeight =
      style.memoryLaneHeight + hostHeight + 2 * style.spanLaneHeight + pipelineLanesHeight(style) + px(10.0f);
  const std::vector<RankRow> rows =
      rankRows(rec, expandedRankGroups ? *expandedRankGroups : std::set<int>{}, style.foldRanksWithoutRecords);
  const RowGeometry geometry{groupHeight, hostHeight, hostScale, memoryScaleBytes};
  float lanesHeight = 0;
  for (const RankRow& rr : rows) lanesHeight += rowHeight(rr, geometry);
  const float totalHeight = lanesHeight + ruler;
  TimelineFrameStats local;

  drawTimeRuler(frame, origin.y, origin.y + totalHeight);
  findVisibleMemoryColumns(frame, rec, rows, geometry, origin.y + ruler, style);
  // Rows outside the window's visible part cost nothing: a 64-rank job scrolls.
  const ImVec2 clipMin = dl->GetClipRectMin(), clipMax = dl->GetClipRectMax();
  float y0 = origin.y + ruler;
  for (const RankRow& rr : rows) {
    const float y = y0, height = rowHeight(rr, geometry);
    y0 += height;
    if (y > clipMax.y || y + height < clipMin.y) continue;
    if (!rr.missingRanks.empty()) {
      drawMissingRanksLine(frame, rr, origin.x, y);
      continue;
    }
    ++local.rowsDrawn;
    drawRankLanes(frame, rec, rr, origin.x, y, geometry, style, selection, cursor, local, expandedRankGroups);
  }
  drawPlayhead(frame, playheadNs, origin.y, totalHeight);

  // The time ruler places the playhead (click or drag); the rest zooms and pans.
  const ImVec2 mouse = frame.mouse;
  const bool onRuler = mouse.y >= origin.y && mouse.y < origin.y + ruler && mouse.x >= x0 && mouse.x < x0 + w;
  if (onRuler && frame.windowHovered && ImGui::IsMouseDown(0)) {
    cursor.seek = true;
    cursor.seekNs = std::max(0.0, frame.ownNs(mouse.x));
  }
  // Interaction over the whole timeline: wheel zooms around the cursor, dragging pans.
  ImGui::SetCursorScreenPos(origin);  // the rank groups' label buttons moved it
  ImGui::InvisibleButton("timeline", ImVec2(width, totalHeight));
  if (ImGui::IsItemHovered()) {
    const float wheel = ImGui::GetIO().MouseWheel;
    if (wheel != 0.0f) axis.zoom(axis.toNs(mouse.x, x0, w), wheel);
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(0, 2.0f) && !cursor.seek) {
    axis.drag(ImGui::GetIO().MouseDelta.x, w);
  }
  local.laneWidth = w;
  if (stats) *stats = local;
  ImGui::PopID();
  return totalHeight;
}

}  // namespace shardscope::ui
