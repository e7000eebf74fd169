#include "ui/timeline_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "trace/forward_search.h"
#include "trace/ring_schedule.h"
#include "ui/item_probe.h"
#include "ui/memory_at.h"
#include "ui/memory_columns.h"
#include "ui/theme.h"

namespace shardscope::ui {

using trace::Event;
using trace::kMemoryRoleCount;

namespace {

constexpr ImU32 kPlayheadColor = IM_COL32(255, 220, 90, 235);
constexpr ImU32 kTotalLineColor = IM_COL32(255, 255, 255, 200);

// A label drawn onto a lane, noted for a test (under its kind and the lane's top) when one listens.
void laneText(const LaneFrame& f, ImVec2 at, ImU32 color, const char* text, const char* kind, float laneTop) {
  f.drawList->AddText(at, color, text);
  if (itemProbeOn())
    noteText(std::string("lane-text:") + kind + "@" + std::to_string(laneTop) + ":" + text, at.x, at.y, text);
}

// The memory lane's top line holds the step markers' labels ("s3"); its other labels start below.
float belowStepLabels(float laneTop) { return laneTop + 1 + ImGui::GetTextLineHeight(); }

void drawFold(ImDrawList* dl, float x0, float x1, float y0, float y1) {
  dl->AddRectFilled(ImVec2(x0, y0 + 2), ImVec2(std::max(x1, x0 + 1), y1 - 2), IM_COL32(110, 110, 120, 255));
}

// A compute span's short label: "optim", or F / R (forward again, activation checkpointing) / B
// before its unit.
std::string computeLabel(const trace::ComputeSpan& e) {
  switch (static_cast<trace::ComputeKind>(e.op)) {
    case trace::ComputeKind::Optimizer:
      return "optim";
    case trace::ComputeKind::Forward:
      return trace::isRecomputation(e) ? "R " : "F ";
    case trace::ComputeKind::CopyToDevice:
      return "H2D ";
    case trace::ComputeKind::CopyToHost:
      return "D2H ";
    case trace::ComputeKind::PinHostMemory:
      return "pin ";
    default:
      return "B ";
  }
}

template <class Span>
std::string stepText(const Span& e) {
  if (e.step < 0) return "setup, before the first step";  // e.g. --offload cpu pinning the shards
  std::string text = "step " + std::to_string(e.step);
  if (e.microBatch != 0) text += ", micro-batch " + std::to_string(e.microBatch);
  return text;
}

bool spansHaveSameTarget(const trace::CollectiveSpan& e, const CollectiveSelection& sel) {
  return sel.active && e.op == sel.op && e.step == sel.step && e.phase == sel.phase && e.microBatch == sel.microBatch &&
         e.text() == sel.unit;
}

// The peak as a dashed red line with its figure at the right, below the step labels' line (the
// lane's top, where a run's peak usually is). Returns where its figure was drawn.
ImVec2 drawPeak(const LaneFrame& f, int64_t peakTotal, double scale, float y0, float memBottom, float textTop) {
  const float peakY = memBottom - static_cast<float>(static_cast<double>(peakTotal) * scale);
  for (float x = f.x0; x < f.x0 + f.width; x += 8) {
    f.drawList->AddLine(ImVec2(x, peakY), ImVec2(x + 4, peakY), IM_COL32(255, 90, 90, 220));
  }
  const std::string peak = "peak " + formatBytes(static_cast<double>(peakTotal));
  const ImVec2 at(f.x0 + f.width - ImGui::CalcTextSize(peak.c_str()).x - 4,
                  std::max(peakY - ImGui::GetFontSize() - 1, textTop));
  laneText(f, at, IM_COL32(255, 120, 120, 255), peak.c_str(), "peak", y0);
  return at;
}

// The device's capacity (--gpu-memory): a line across the memory lane where it falls on the lane's
// scale, else a note at the top that it lies above, with the headroom left at the rank's peak.
// Its text keeps below the step labels' line, and a line below the peak's figure where a narrow
// lane would run the two together.
void drawCapacity(const LaneFrame& f, double capacity, int64_t peakDevice, double scale, float y0, float memBottom,
                  ImVec2 peakLabel) {
  if (capacity <= 0) return;
  const ImU32 color = IM_COL32(120, 200, 255, 230);
  const double left = capacity - static_cast<double>(peakDevice);
  const std::string headroom =
      left >= 0 ? formatBytes(left) + " free at the peak" : formatBytes(-left) + " OVER at the peak";
  const float y = memBottom - static_cast<float>(capacity * scale);
  const bool onScale = y >= y0;
  if (onScale) f.drawList->AddLine(ImVec2(f.x0, y), ImVec2(f.x0 + f.width, y), color, 1.5f);
  const std::string text =
      "capacity " + trace::formatDecimalGB(capacity) + (onScale ? ", " : " (above this scale), ") + headroom;
  ImVec2 at(f.x0 + 4, onScale ? std::max(y + 1, belowStepLabels(y0)) : belowStepLabels(y0));
  const float line = ImGui::GetTextLineHeight();
  if (std::abs(at.y - peakLabel.y) < line && at.x + ImGui::CalcTextSize(text.c_str()).x + px(8.0f) > peakLabel.x) {
    at.y = peakLabel.y + line;
  }
  laneText(f, at, color, text.c_str(), "capacity", y0);
}

// How the tooltip's sent and received bytes were counted.
const char* trafficNote(const trace::CollectiveSpan& e) {
  if (static_cast<trace::CollectiveOp>(e.op) != trace::CollectiveOp::AllToAll) {
    return trace::trafficBasis(static_cast<trace::CollectiveOp>(e.op));
  }
  return e.ownPartBytes >= 0 ? "in and out less its own part, which stays"
                             : "(N-1)/N of in and out: its splits not recorded, taken as even";
}

void spanTooltip(const trace::CollectiveSpan& e, double originNs) {
  const auto op = static_cast<trace::CollectiveOp>(e.op);
  const double seconds = (e.endNs - e.beginNs) / 1e9;
  const double algbw = trace::algbwBytesPerSecond(trace::collectiveSizeBytes(e), seconds);
  ImGui::Text("%s %s  (%s, %s)", trace::collectiveOpName(op), trace::collectiveUnit(e).c_str(), stepText(e).c_str(),
              trace::phaseName(static_cast<trace::Phase>(e.phase)));
  const std::string impl = trace::collectiveImplementation(e);
  if (impl != trace::collectiveOpName(op)) ImGui::Text("implemented as %s", impl.c_str());
  if (e.sizeUnknown) {  // a kernel known by its name alone: no figure in bytes to give
    ImGui::Text("size not recorded in its trace (known by its kernel), group of %d", e.worldSize);
  } else {
    ImGui::Text("in %s, out %s, group of %d", formatBytes(static_cast<double>(e.bytes)).c_str(),
                formatBytes(static_cast<double>(e.bytesOut)).c_str(), e.worldSize);
    const auto ring = trace::collectiveTraffic(e);
    ImGui::Text("this rank sends %s and receives %s (%s)", formatBytes(static_cast<double>(ring.sentBytes)).c_str(),
                formatBytes(static_cast<double>(ring.receivedBytes)).c_str(), trafficNote(e));
  }
  ImGui::Text("issued %s, took %s", formatDuration(e.issueNs - originNs).c_str(),
              formatDuration(static_cast<double>(e.endNs - e.beginNs)).c_str());
  if (!e.sizeUnknown)
    ImGui::Text("algbw %.3f GB/s, busbw %.3f GB/s", algbw / 1e9, algbw * trace::busbwFactor(op, e.worldSize) / 1e9);
  ImGui::TextDisabled("click: highlight this collective on every rank");
}

void spanTooltip(const trace::ComputeSpan& e, double originNs) {
  ImGui::Text("%s %s  (%s)",
              trace::isRecomputation(e) ? "forward again (activation checkpointing)"
                                        : trace::computeKindName(static_cast<trace::ComputeKind>(e.op)),
              e.text().c_str(), stepText(e).c_str());
  ImGui::Text("%s, at %s", formatDuration(static_cast<double>(e.endNs - e.beginNs)).c_str(),
              formatDuration(e.beginNs - originNs).c_str());
}

// What differs between a collective and a compute span drawn: its colour, its label, whether
// it is the selected collective, its tooltip, what a click on it does.
ImU32 spanColor(const trace::CollectiveSpan& e) {
  if (e.processGroup == static_cast<uint8_t>(trace::ProcessGroup::Tensor)) return tensorGroupColor();
  // Its implementation, after the unit in its text, has a namespace: an op outside c10d's (whose
  // backends name theirs "nccl:all_reduce"; trace::collectiveImplementation).
  if (e.text().find("::") != std::string::npos) return outsideC10dColor();
  return collectiveColor(static_cast<trace::CollectiveOp>(e.op));
}
ImU32 spanColor(const trace::ComputeSpan& e) { return computeColor(static_cast<trace::ComputeKind>(e.op)); }

std::string spanLabel(const trace::CollectiveSpan& e) {
  const std::string label =
      std::string(collectiveShortName(static_cast<trace::CollectiveOp>(e.op))) + " " + trace::collectiveUnit(e);
  if (e.sizeUnknown) return label;  // no size in its trace: none drawn
  return label + " " + formatBytes(static_cast<double>(trace::collectiveSizeBytes(e)));
}
std::string spanLabel(const trace::ComputeSpan& e) { return computeLabel(e) + e.text(); }

bool isSelected(const trace::CollectiveSpan& e, const CollectiveSelection& selection) {
  return spansHaveSameTarget(e, selection);
}
bool isSelected(const trace::ComputeSpan&, const CollectiveSelection&) { return false; }

void onClick(const trace::CollectiveSpan& e, CollectiveSelection& selection) {
  selection.active = true;
  selection.op = e.op;
  selection.step = e.step;
  selection.unit = e.text();
  selection.phase = e.phase;
  selection.microBatch = e.microBatch;
}
void onClick(const trace::ComputeSpan&, CollectiveSelection&) {}

// Drawn apart from the compute lane's spans: step spans, and --offload cpu's copies (their band).
bool outsideLane(const trace::CollectiveSpan&) { return false; }
bool outsideLane(const trace::ComputeSpan& e) {
  return static_cast<trace::ComputeKind>(e.op) == trace::ComputeKind::Step || trace::isOffloadSpan(e);
}

// One span drawn in full: its block, its label where it fits, its outline when selected, and its
// tooltip (and, for a collective, selection on click) when hovered.
template <class Span>
void drawSpan(const LaneFrame& f, const Span& e, float xa, float xb, float y, float height,
              CollectiveSelection& selection, TimelineFrameStats& stats) {
  ImDrawList* dl = f.drawList;
  ++stats.spansDrawn;
  // Rounded corners only where they show: a narrow span's rounding cost a path and a polygon.
  dl->AddRectFilled(ImVec2(xa, y + 1), ImVec2(xb, y + height - 1), spanColor(e), xb - xa >= 8.0f ? 2.0f : 0.0f);
  if (isSelected(e, selection)) {
    ++stats.spansHighlighted;
    dl->AddRect(ImVec2(xa - 1, y - 1), ImVec2(xb + 1, y + height + 1), IM_COL32(255, 255, 255, 255), 2.0f, 0, 2.0f);
  }
  const std::string text = spanLabel(e);
  if (ImGui::CalcTextSize(text.c_str()).x + 4 < xb - xa) {
    dl->AddText(ImVec2(xa + 2, y + 2), IM_COL32(15, 15, 20, 255), text.c_str());
  }
  const bool hovered =
      f.windowHovered && f.mouse.x >= xa && f.mouse.x <= xb && f.mouse.y >= y && f.mouse.y < y + height;
  if (!hovered) return;
  ImGui::BeginTooltip();
  spanTooltip(e, f.clockOriginNs());
  ImGui::EndTooltip();
  if (ImGui::IsMouseClicked(0)) onClick(e, selection);
}

// --offload cpu's copies and pinning, over the compute lane's lower third: the copies run on the
// communication stream and the pinning on the host, so they overlap the spans above them. At
// least a pixel each; only ranks that have them pay for this pass.
void drawOffloadSpans(const LaneFrame& f, const trace::RankTimeline& t, float y, const TimelineStyle& style,
                      CollectiveSelection& selection, TimelineFrameStats& stats) {
  const float band = style.spanLaneHeight / 3;
  const float bandY = y + style.spanLaneHeight - band;
  for (size_t i = trace::firstSpanFrom(t.compute, f.beginAbs - static_cast<double>(t.longestCompute));
       i < t.compute.size() && t.compute[i].beginNs < f.endAbs; ++i) {
    const trace::ComputeSpan& e = t.compute[i];
    if (!trace::isOffloadSpan(e) || e.endNs < f.beginAbs) continue;
    const float xa = f.toX(static_cast<double>(e.beginNs));
    const float xb = std::max(xa + 1.0f, f.toX(static_cast<double>(e.endNs)));
    drawSpan(f, e, xa, xb, bandY, band, selection, stats);
  }
}

}  // namespace

void drawTimeRuler(const LaneFrame& f, float y, float bottom) {
  const TimeAxis& axis = *f.axis;
  const double rawStep = (axis.endNs - axis.beginNs) / 8.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(rawStep)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (magnitude * m >= rawStep) {
      step = magnitude * m;
      break;
    }
  }
  const float ruler = ImGui::GetFontSize() + px(5.0f);
  for (double t = std::ceil(axis.beginNs / step) * step; t < axis.endNs; t += step) {
    const float x = static_cast<float>(axis.toX(t, f.x0, f.width));
    f.drawList->AddLine(ImVec2(x, y + ruler - px(6.0f)), ImVec2(x, bottom), IM_COL32(255, 255, 255, 18));
    // On the run's own clock: a diff's A is drawn shifted (its seeks and tooltips are its own too).
    f.drawList->AddText(ImVec2(x + 2, y), IM_COL32(170, 170, 180, 255), formatDuration(t + f.shiftNs).c_str());
  }
}

LaneFrame LaneFrame::forRun(double runOriginNs, double runShiftNs) const {
  LaneFrame other = *this;
  other.shiftNs = runShiftNs;
  other.originNs = runOriginNs + runShiftNs;
  other.beginAbs = other.originNs + axis->beginNs;
  other.endAbs = other.originNs + axis->endNs;
  return other;
}

const std::vector<size_t>& laneColumns(const LaneFrame& f, const trace::RoleTrack& samples,
                                       const trace::RangeMax& totals, const TimelineStyle& style,
                                       std::vector<size_t>& found) {
  const ColumnSpan span{f.beginAbs, f.endAbs, static_cast<int>(f.width)};
  if (style.memoryColumns) return style.memoryColumns->columns(samples, totals, span);
  return found = findMemoryColumns(samples, totals, span);
}

namespace {

// A stack of bytes by role over time, one column per pixel (the column's highest sample,
// ui/memory_columns.h) with the total as a line: the body of a memory lane. Returns the columns
// drawn.
int drawRoleStack(const LaneFrame& f, const trace::RoleTrack& samples, const trace::RangeMax& totals, float y0,
                  float height, double scale, const TimelineStyle& style) {
  ImDrawList* dl = f.drawList;
  const float memBottom = y0 + height;
  if (samples.empty() || scale <= 0) return 0;
  std::vector<size_t> found;
  const std::vector<size_t>& columns = laneColumns(f, samples, totals, style, found);
  int drawn = 0;
  float lastTotalY = -1;
  // Columns showing the same sample merge into one run, drawn as one rect per role. A lane of a
  // long run is thousands of runs: their rects go straight into the draw list, one reservation a
  // run (AddRectFilled's checks and reservation per rect would cost a tenth of a frame).
  size_t runSample = kNoSample;
  float runStart = 0, runEnd = 0;
  auto flushRun = [&] {
    if (runSample == kNoSample) return;
    const trace::RoleBytes bytes = samples.bytes(runSample);
    int shown = 0;
    for (int role = 0; role < kMemoryRoleCount; ++role) shown += bytes[role] > 0 && style.showRole[role];
    if (shown == 0) return;
    dl->PrimReserve(6 * shown, 4 * shown);
    float y = memBottom;
    for (int role = 0; role < kMemoryRoleCount; ++role) {
      if (bytes[role] <= 0 || !style.showRole[role]) continue;
      const float h = static_cast<float>(bytes[role] * scale);
      dl->PrimRect(ImVec2(runStart, y - h), ImVec2(runEnd, y), roleColor(static_cast<trace::MemoryRole>(role)));
      y -= h;
    }
  };
  for (size_t c = 0; c < columns.size(); ++c) {
    const size_t best = columns[c];
    if (best == kNoSample) continue;
    // The next column's roles are read when its run ends: fetch them meanwhile.
    if (c + 1 < columns.size() && columns[c + 1] != kNoSample) samples.prefetch(columns[c + 1]);
    const float x = f.x0 + static_cast<float>(c);
    if (best == runSample && runEnd == x) {
      runEnd = x + 1.0f;
    } else {
      flushRun();
      runSample = best;
      runStart = x;
      runEnd = x + 1.0f;
    }
    // The total line follows the column's highest sample, as the stack below it does: the last
    // sample's total swung between a step's low and high in every column of a long run, and the
    // lines joining them washed the whole lane white. Drawn as one-pixel rects, not anti-aliased
    // lines: the same pixels, at a fraction of the cost.
    const float totalY = std::floor(memBottom - static_cast<float>(static_cast<double>(totals.value(best)) * scale));
    if (lastTotalY >= 0 && totalY != lastTotalY) {
      dl->AddRectFilled(ImVec2(x, std::min(lastTotalY, totalY)), ImVec2(x + 1, std::max(lastTotalY, totalY) + 1),
                        kTotalLineColor);
    } else if (lastTotalY >= 0) {
      dl->AddRectFilled(ImVec2(x - 1, totalY), ImVec2(x + 1, totalY + 1), kTotalLineColor);
    }
    lastTotalY = totalY;
    ++drawn;
  }
  flushRun();
  return drawn;
}

}  // namespace

double laneScale(float height, double scaleBytes) { return scaleBytes > 0 ? (height - 4) / scaleBytes : 0; }

int drawMemoryLane(const LaneFrame& f, const trace::RankTimeline& t, float y0, float height, double scaleBytes,
                   const TimelineStyle& style) {
  f.drawList->AddRectFilled(ImVec2(f.x0, y0), ImVec2(f.x0 + f.width, y0 + height), laneBackground());
  const double scale = laneScale(height, scaleBytes);
  if (t.memory.empty() || scale <= 0) return 0;
  const int drawn = drawRoleStack(f, t.memory, t.memoryTotals, y0, height, scale, style);
  const ImVec2 peakLabel = drawPeak(f, t.peakTotal, scale, y0, y0 + height, belowStepLabels(y0));
  drawCapacity(f, style.capacityBytes, t.peakDevice, scale, y0, y0 + height, peakLabel);
  return drawn;
}

int drawHostMemoryLane(const LaneFrame& f, const trace::RankTimeline& t, float y0, float height, double scaleBytes,
                       const TimelineStyle& style) {
  f.drawList->AddRectFilled(ImVec2(f.x0, y0), ImVec2(f.x0 + f.width, y0 + height), laneBackground());
  const double scale = laneScale(height, scaleBytes);
  if (t.host.memory.empty() || scale <= 0) return 0;
  const int drawn = drawRoleStack(f, t.host.memory, t.host.totals, y0, height, scale, style);
  drawPeak(f, t.host.peakTotal, scale, y0, y0 + height, y0);  // no step labels in this lane
  laneText(f, ImVec2(f.x0 + 4, y0 + 1), laneLabelColor(), "host memory (--offload cpu), its own scale", "host", y0);
  return drawn;
}

void drawMemoryHover(const LaneFrame& f, const trace::RunRecording& rec, int r, float y0, float height,
                     TimelineCursor& cursor, trace::MemorySpace space) {
  if (!f.mouseIn(y0, height)) return;
  const double tNs = f.ownNs(f.mouse.x);
  cursor.valid = true;
  cursor.tNs = tNs;
  cursor.rank = r;
  const bool host = space == trace::MemorySpace::Host;
  const auto bytes = memoryAt(rec, r, tNs, space);
  int64_t total = 0;
  for (auto b : bytes) total += b;
  ImGui::BeginTooltip();
  ImGui::Text("rank %d at %s: %s allocated%s", r, formatDuration(tNs).c_str(),
              formatBytes(static_cast<double>(total)).c_str(), host ? " in host memory" : "");
  for (int role = (host ? trace::kTensorRoleCount : kMemoryRoleCount) - 1; role >= 0; --role) {
    ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(roleColor(static_cast<trace::MemoryRole>(role))),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(px(10), px(10)));
    ImGui::SameLine();
    ImGui::Text("%-16s %12lld B  (%s)", trace::memoryRoleName(static_cast<trace::MemoryRole>(role)),
                static_cast<long long>(bytes[role]), formatBytes(static_cast<double>(bytes[role])).c_str());
  }
  ImGui::EndTooltip();
  f.drawList->AddLine(ImVec2(f.mouse.x, y0), ImVec2(f.mouse.x, y0 + height), IM_COL32(255, 255, 255, 120));
}

namespace {

// A lane of spans sorted by begin (their begins in `begins`), the widest `slack` ns long.
template <class Span>
void drawSpans(const LaneFrame& f, const std::vector<Span>& spans, const trace::TimeIndex& begins, double slack,
               float y, const TimelineStyle& style, CollectiveSelection& selection, TimelineFrameStats& stats) {
  const float height = style.spanLaneHeight;
  size_t i = trace::firstSpanFrom(spans, f.beginAbs - slack);  // the widest span as slack
  float foldStart = -1, foldEnd = -1;
  int foldCount = 0;
  size_t lastJump = 0;
  for (; i < spans.size() && spans[i].beginNs < f.endAbs; ++i) {
    const Span& e = spans[i];
    if (outsideLane(e)) continue;
    if (e.endNs < f.beginAbs) continue;
    const float xa = f.toX(static_cast<double>(e.beginNs));
    const float xb = f.toX(static_cast<double>(e.endNs));
    if (xb - xa < style.foldPixels) {
      if (foldCount > 0 && xa - foldEnd < style.foldPixels) {
        foldEnd = std::max(foldEnd, xb);
        ++foldCount;
      } else {
        if (foldCount > 0) drawFold(f.drawList, foldStart, foldEnd, y, y + height);
        foldStart = xa;
        foldEnd = xb;
        foldCount = 1;
      }
      ++stats.spansFolded;
      // Skip everything that starts inside this pixel: it folds into the same block. A forward
      // search per pixel keeps the lane O(width x log n) however many spans hide there.
      const double skipTo = f.toAbsNs(xa + 1.0f);
      const size_t jump = begins.lastBefore(i, skipTo, i + lastJump) + 1;
      lastJump = jump - i;  // the next pixel likely hides as many
      if (jump > i + 1) {
        // Spans in between may end later than this one: keep the fold's extent honest.
        foldEnd = std::max(foldEnd, xa + 1.0f);
        foldCount += static_cast<int>(jump - i - 1);
        stats.spansFolded += static_cast<int>(jump - i - 1);
        i = jump - 1;
      }
      continue;
    }
    if (foldCount > 0) {
      drawFold(f.drawList, foldStart, foldEnd, y, y + height);
      foldCount = 0;
    }
    drawSpan(f, e, xa, xb, y, height, selection, stats);
  }
  if (foldCount > 0) drawFold(f.drawList, foldStart, foldEnd, y, y + height);
}

}  // namespace

void drawSpanLane(const LaneFrame& f, const trace::RankTimeline& t, SpanLaneKind kind, float y,
                  const TimelineStyle& style, CollectiveSelection& selection, TimelineFrameStats& stats) {
  if (kind == SpanLaneKind::Collectives) {
    drawSpans(f, t.collectives, t.collectiveBegins, static_cast<double>(t.longestCollective), y, style, selection,
              stats);
    return;
  }
  drawSpans(f, t.compute, t.computeBegins, static_cast<double>(t.longestCompute), y, style, selection, stats);
  if (t.offloadSpans) drawOffloadSpans(f, t, y, style, selection, stats);
}

// Intervals within one pixel merge, and those that start inside the pixel a run ends in are skipped
// by a forward search (the last of them, disjoint and sorted, ends furthest), so the cost follows
// the width.
void drawExposedCommLane(const LaneFrame& f, const std::vector<std::pair<int64_t, int64_t>>& exposed, float y) {
  auto i = std::lower_bound(exposed.begin(), exposed.end(), f.beginAbs,
                            [](const std::pair<int64_t, int64_t>& e, double t) { return e.second < t; });
  float runStart = -1, runEnd = -1;
  const ImU32 red = IM_COL32(230, 70, 60, 255);
  for (; i != exposed.end() && i->first < f.endAbs; ++i) {
    const float xa = f.toX(static_cast<double>(i->first));
    const float xb = std::max(xa + 1.0f, f.toX(static_cast<double>(i->second)));
    if (runStart >= 0 && xa <= runEnd + 1.0f) {
      runEnd = std::max(runEnd, xb);
      const double skipTo = f.toAbsNs(runEnd + 1.0f);
      const size_t at = static_cast<size_t>(i - exposed.begin());
      const size_t next = trace::firstNotBefore(exposed, at + 1, [skipTo](const std::pair<int64_t, int64_t>& e) {
        return static_cast<double>(e.first) < skipTo;
      });
      if (next > at + 1) {
        i = exposed.begin() + static_cast<std::ptrdiff_t>(next - 1);
        runEnd = std::max(runEnd, f.toX(static_cast<double>(i->second)));
      }
      continue;
    }
    if (runStart >= 0) f.drawList->AddRectFilled(ImVec2(runStart, y), ImVec2(runEnd, y + px(4.0f)), red);
    runStart = xa;
    runEnd = xb;
  }
  if (runStart >= 0) f.drawList->AddRectFilled(ImVec2(runStart, y), ImVec2(runEnd, y + px(4.0f)), red);
}

void drawWaitLane(const LaneFrame& f, const std::vector<stats::CollectiveWait>& waits, int64_t longestNs, int rank,
                  float y, float height, TimelineFrameStats& stats) {
  const double from = f.beginAbs - static_cast<double>(longestNs);
  auto i = std::lower_bound(waits.begin(), waits.end(), from, [](const stats::CollectiveWait& w, double t) {
    return static_cast<double>(w.issuedNs) < t;
  });
  for (; i != waits.end() && static_cast<double>(i->issuedNs) < f.endAbs; ++i) {
    const float xa = f.toX(static_cast<double>(i->issuedNs));
    if (i->lastRank == rank) {
      if (!i->clear) continue;
      const float s = height * 0.35f;  // a red mark at its issue: this rank was the one waited for
      f.drawList->AddTriangleFilled(ImVec2(xa - s, y), ImVec2(xa + s, y), ImVec2(xa, y + s),
                                    IM_COL32(230, 70, 60, 255));
      ++stats.lastMarks;
      continue;
    }
    const float xb = f.toX(static_cast<double>(i->lastIssuedNs));
    if (xb - xa < 2.0f) continue;  // under two pixels of waiting: nothing to see
    drawHatch(f.drawList, xa, xb, y, height);
    ++stats.waitsHatched;
  }
}

void drawPauses(const LaneFrame& f, const std::vector<trace::GroupSpan>& pauses, float laneY, float laneHeight) {
  ImDrawList* dl = f.drawList;
  for (const auto& g : pauses) {
    if (g.endNs < f.beginAbs || g.beginNs > f.endAbs) continue;
    const float xa = std::max(f.x0, f.toX(static_cast<double>(g.beginNs)));
    const float xb = std::min(f.x0 + f.width, f.toX(static_cast<double>(g.endNs)));
    dl->AddRectFilled(ImVec2(xa, laneY), ImVec2(std::max(xb, xa + 1), laneY + laneHeight), IM_COL32(120, 120, 140, 90));
    for (float x = xa - laneHeight; x < xb; x += 8) {  // hatching: a pause, not work
      dl->AddLine(ImVec2(std::max(x, xa), laneY + laneHeight - std::max(0.0f, xa - x)),
                  ImVec2(std::min(x + laneHeight, xb), laneY + std::max(0.0f, x + laneHeight - xb)),
                  IM_COL32(200, 200, 220, 70));
    }
    if (xb - xa > 60) dl->AddText(ImVec2(xa + 3, laneY + 2), IM_COL32(230, 230, 240, 220), "paused");
  }
}

void drawStepMarkers(const LaneFrame& f, const std::vector<Event>& steps, float y, float height) {
  // A marker per step where they stand apart; where a long run puts many steps in a pixel, only
  // the first a few pixels after the last one drawn, and a label only where one fits (thousands of
  // overlapping lines and labels washed the lanes white).
  const float minGap = px(4.0f), labelGap = px(8.0f);
  float lastLabelEnd = -1e9f;
  const auto beginsBefore = [](const Event& s, double t) { return static_cast<double>(s.beginNs) < t; };
  auto it = std::lower_bound(steps.begin(), steps.end(), f.beginAbs, beginsBefore);
  for (; it != steps.end() && static_cast<double>(it->beginNs) <= f.endAbs;) {
    const auto at = it;
    const float x = f.toX(static_cast<double>(at->beginNs));
    // The next marker drawn is the first step at least minGap further: a search, not a walk.
    it = std::lower_bound(at + 1, steps.end(), f.toAbsNs(x + minGap), beginsBefore);
    f.drawList->AddLine(ImVec2(x, y), ImVec2(x, y + height), IM_COL32(255, 255, 255, 70));
    if (x < lastLabelEnd + labelGap) continue;
    char label[16];
    std::snprintf(label, sizeof label, "s%d", at->step);
    laneText(f, ImVec2(x + 2, y + 1), IM_COL32(200, 200, 210, 160), label, "step", y);
    lastLabelEnd = x + 2 + ImGui::CalcTextSize(label).x;
  }
}

void drawPlayhead(const LaneFrame& f, double playheadNs, float y, float height) {
  const double drawnNs = playheadNs - f.shiftNs;
  if (drawnNs < f.axis->beginNs || drawnNs > f.axis->endNs) return;
  const float x = static_cast<float>(f.axis->toX(drawnNs, f.x0, f.width));
  f.drawList->AddLine(ImVec2(x, y), ImVec2(x, y + height), kPlayheadColor, px(2.0f));
  f.drawList->AddTriangleFilled(ImVec2(x - 5, y), ImVec2(x + 5, y), ImVec2(x, y + 7), kPlayheadColor);
}

}  // namespace shardscope::ui
