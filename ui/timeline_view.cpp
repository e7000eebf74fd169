#include "ui/timeline_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "trace/forward_search.h"
#include "trace/ring_schedule.h"
#include "ui/theme.h"

namespace shardscope::ui {

using trace::Event;
using trace::kMemoryRoleCount;

trace::RoleBytes memoryAt(const trace::RunRecording& rec, int rank, double tNs) {
  const auto& samples = rec.rank(rank).memory;
  const double t = tNs + static_cast<double>(rec.originNs());
  auto it = std::upper_bound(samples.begin(), samples.end(), t,
                             [](double value, const trace::MemorySample& s) { return value < s.tNs; });
  if (it == samples.begin()) return {};
  return std::prev(it)->bytes;
}

namespace {

// The last sample at or before tNs, searching forward from `from` (the previous column's last).
size_t lastSampleAtOrBefore(const std::vector<int64_t>& times, size_t from, double tNs) {
  return trace::firstNotBefore(times, from + 1, [tNs](int64_t t) { return static_cast<double>(t) <= tNs; }) - 1;
}

struct LaneGeometry {
  float x0, width, y0, height;
};

void drawFold(ImDrawList* dl, float x0, float x1, float y0, float y1, int count) {
  dl->AddRectFilled(ImVec2(x0, y0 + 2), ImVec2(std::max(x1, x0 + 1), y1 - 2), IM_COL32(110, 110, 120, 255));
  (void)count;
}

// A compute span's short label: "optim", or F / R (forward again, activation checkpointing) / B
// before its unit.
std::string computeLabel(const Event& e) {
  switch (static_cast<trace::ComputeKind>(e.op)) {
    case trace::ComputeKind::Optimizer: return "optim";
    case trace::ComputeKind::Forward: return trace::isRecomputation(e) ? "R " : "F ";
    default: return "B ";
  }
}

std::string stepText(const Event& e) {
  std::string text = "step " + std::to_string(e.step);
  if (e.microBatch != 0) text += ", micro-batch " + std::to_string(e.microBatch);
  return text;
}

constexpr ImU32 kPlayheadColor = IM_COL32(255, 220, 90, 235);

// Waits at the step gate: a shaded, labelled band over the rank's compute and comm lanes. There
// is one per Step a user pressed, so a plain pass over them.
void drawPauses(ImDrawList* dl, const std::vector<Event>& pauses, const TimeAxis& axis, double originNs,
                double beginAbs, double endAbs, float x0, float w, float laneY, float laneHeight) {
  for (const auto& g : pauses) {
    if (g.endNs < beginAbs || g.beginNs > endAbs) continue;
    const float xa = std::max(x0, static_cast<float>(axis.toX(g.beginNs - originNs, x0, w)));
    const float xb = std::min(x0 + w, static_cast<float>(axis.toX(g.endNs - originNs, x0, w)));
    dl->AddRectFilled(ImVec2(xa, laneY), ImVec2(std::max(xb, xa + 1), laneY + laneHeight), IM_COL32(120, 120, 140, 90));
    for (float x = xa - laneHeight; x < xb; x += 8) {  // hatching: a pause, not work
      dl->AddLine(ImVec2(std::max(x, xa), laneY + laneHeight - std::max(0.0f, xa - x)),
                  ImVec2(std::min(x + laneHeight, xb), laneY + std::max(0.0f, x + laneHeight - xb)),
                  IM_COL32(200, 200, 220, 70));
    }
    if (xb - xa > 60) dl->AddText(ImVec2(xa + 3, laneY + 2), IM_COL32(230, 230, 240, 220), "paused");
  }
}

// The device's capacity (--gpu-memory): a line across the memory lane where it falls on the lane's
// scale, else a note at the top that it lies above, with the headroom left at the rank's peak.
void drawCapacity(ImDrawList* dl, double capacity, int64_t peakDevice, double scale, float x0, float w, float y0,
                  float memBottom) {
  if (capacity <= 0) return;
  const ImU32 color = IM_COL32(120, 200, 255, 230);
  const double left = capacity - static_cast<double>(peakDevice);
  const std::string headroom = left >= 0 ? formatBytes(left) + " free at the peak"
                                         : formatBytes(-left) + " OVER at the peak";
  const float y = memBottom - static_cast<float>(capacity * scale);
  if (y >= y0) {
    dl->AddLine(ImVec2(x0, y), ImVec2(x0 + w, y), color, 1.5f);
    const std::string text = "capacity " + trace::formatDecimalGB(capacity) + ", " + headroom;
    dl->AddText(ImVec2(x0 + 4, y + 1), color, text.c_str());
    return;
  }
  const std::string text = "capacity " + trace::formatDecimalGB(capacity) + " (above this scale), " + headroom;
  dl->AddText(ImVec2(x0 + 4, y0 + 1), color, text.c_str());
}

// Just under the comm lane, a red bar where collectives ran with no forward or backward compute on the
// rank (RunRecording::exposedComm): time the step waited on the network. Intervals within one
// pixel merge, and those that start inside the pixel a run ends in are skipped by a forward
// search (the last of them, disjoint and sorted, ends furthest), so the cost follows the width.
void drawExposedComm(ImDrawList* dl, const std::vector<std::pair<int64_t, int64_t>>& exposed, const TimeAxis& axis,
                     double originNs, double beginAbs, double endAbs, float x0, float w, float y) {
  auto i = std::lower_bound(exposed.begin(), exposed.end(), beginAbs,
                            [](const std::pair<int64_t, int64_t>& e, double t) { return e.second < t; });
  float runStart = -1, runEnd = -1;
  const ImU32 red = IM_COL32(230, 70, 60, 255);
  for (; i != exposed.end() && i->first < endAbs; ++i) {
    const float xa = static_cast<float>(axis.toX(i->first - originNs, x0, w));
    const float xb = std::max(xa + 1.0f, static_cast<float>(axis.toX(i->second - originNs, x0, w)));
    if (runStart >= 0 && xa <= runEnd + 1.0f) {
      runEnd = std::max(runEnd, xb);
      const double skipTo = originNs + axis.toNs(runEnd + 1.0f, x0, w);
      const size_t at = static_cast<size_t>(i - exposed.begin());
      const size_t next = trace::firstNotBefore(exposed, at + 1, [skipTo](const std::pair<int64_t, int64_t>& e) {
        return static_cast<double>(e.first) < skipTo;
      });
      if (next > at + 1) {
        i = exposed.begin() + static_cast<std::ptrdiff_t>(next - 1);
        runEnd = std::max(runEnd, static_cast<float>(axis.toX(i->second - originNs, x0, w)));
      }
      continue;
    }
    if (runStart >= 0) dl->AddRectFilled(ImVec2(runStart, y), ImVec2(runEnd, y + px(4.0f)), red);
    runStart = xa;
    runEnd = xb;
  }
  if (runStart >= 0) dl->AddRectFilled(ImVec2(runStart, y), ImVec2(runEnd, y + px(4.0f)), red);
}

bool spansHaveSameTarget(const Event& e, const CollectiveSelection& sel) {
  return sel.active && e.op == sel.op && e.step == sel.step && e.phase == sel.phase &&
         e.microBatch == sel.microBatch && e.text == sel.unit;
}

}  // namespace

float drawTimeline(const char* id, const trace::RunRecording& rec, TimeAxis& axis,
                   double memoryScaleBytes, float width, const TimelineStyle& style,
                   CollectiveSelection& selection, TimelineCursor& cursor,
                   TimelineFrameStats* stats, double playheadNs) {
  ImGui::PushID(id);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = origin.x + timelineLabelWidth();
  const float w = std::max(width - timelineLabelWidth(), 10.0f);
  const float ruler = ImGui::GetFontSize() + px(5.0f);  // the time labels above the lanes
  const double originNs = rec.originNs() == INT64_MAX ? 0.0 : static_cast<double>(rec.originNs());
  const double beginAbs = originNs + axis.beginNs;
  const double endAbs = originNs + axis.endNs;
  const float groupHeight = style.memoryLaneHeight + 2 * style.spanLaneHeight + px(10.0f);
  const float totalHeight = groupHeight * static_cast<float>(rec.ranks()) + ruler;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  TimelineFrameStats local;

  // Time ruler.
  {
    const double span = axis.endNs - axis.beginNs;
    const double rawStep = span / 8.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(rawStep)));
    double step = magnitude;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (magnitude * m >= rawStep) {
        step = magnitude * m;
        break;
      }
    }
    for (double t = std::ceil(axis.beginNs / step) * step; t < axis.endNs; t += step) {
      const float x = static_cast<float>(axis.toX(t, x0, w));
      dl->AddLine(ImVec2(x, origin.y + ruler - px(6.0f)), ImVec2(x, origin.y + totalHeight), IM_COL32(255, 255, 255, 18));
      dl->AddText(ImVec2(x + 2, origin.y), IM_COL32(170, 170, 180, 255), formatDuration(t).c_str());
    }
  }

  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    const float y0 = origin.y + ruler + groupHeight * static_cast<float>(r);
    char label[32];
    std::snprintf(label, sizeof label, "rank %d", r);
    dl->AddText(ImVec2(origin.x + 4, y0 + 2), IM_COL32(230, 230, 235, 255), label);
    dl->AddText(ImVec2(origin.x + 4, y0 + style.memoryLaneHeight + 2), laneLabelColor(), "compute");
    dl->AddText(ImVec2(origin.x + 4, y0 + style.memoryLaneHeight + style.spanLaneHeight + 2), laneLabelColor(), "comm");
    dl->PushClipRect(ImVec2(x0, y0), ImVec2(x0 + w, y0 + groupHeight), true);
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + w, y0 + style.memoryLaneHeight), laneBackground());

    // --- memory: one column per pixel, each the maximum total within it -------------------------
    const float memBottom = y0 + style.memoryLaneHeight;
    const double scale = memoryScaleBytes > 0 ? (style.memoryLaneHeight - 4) / memoryScaleBytes : 0;
    const auto& samples = t.memory;
    if (!samples.empty() && scale > 0) {
      auto it = std::upper_bound(samples.begin(), samples.end(), beginAbs,
                                 [](double v, const trace::MemorySample& s) { return v < s.tNs; });
      size_t i = it == samples.begin() ? 0 : static_cast<size_t>(it - samples.begin()) - 1;
      const int columns = static_cast<int>(w);
      const double nsPerPixel = (endAbs - beginAbs) / w;
      float lastTotalY = -1;
      // Columns showing the same sample merge into one run, drawn as one rect per role.
      size_t runSample = SIZE_MAX;
      float runStart = 0, runEnd = 0;
      auto flushRun = [&] {
        if (runSample == SIZE_MAX) return;
        const auto& s = samples[runSample];
        float y = memBottom;
        for (int role = 0; role < kMemoryRoleCount; ++role) {
          if (s.bytes[role] <= 0 || !style.showRole[role]) continue;
          const float h = static_cast<float>(s.bytes[role] * scale);
          dl->AddRectFilled(ImVec2(runStart, y - h), ImVec2(runEnd, y), roleColor(static_cast<trace::MemoryRole>(role)));
          y -= h;
        }
      };
      for (int c = 0; c < columns && i < samples.size(); ++c) {
        const double colEnd = beginAbs + (c + 1) * nsPerPixel;
        // The sample in force at the column start, then the largest one inside the column: the
        // column's samples are [i, last]; the range-max tree finds the highest without walking
        // them, so a lane costs O(width x log n) rather than O(samples in view).
        const size_t last = lastSampleAtOrBefore(t.memoryTimes, i, colEnd);
        const size_t best = last > i ? t.memoryTotals.argmax(i, last + 1) : i;
        i = last;
        if (static_cast<double>(t.memoryTimes[best]) > colEnd) continue;  // before the first sample
        const float x = x0 + static_cast<float>(c);
        if (best == runSample && runEnd == x) {
          runEnd = x + 1.0f;
        } else {
          flushRun();
          runSample = best;
          runStart = x;
          runEnd = x + 1.0f;
        }
        const float totalY = memBottom - static_cast<float>(static_cast<double>(t.memoryTotals.value(i)) * scale);
        if (lastTotalY >= 0 && totalY != lastTotalY) dl->AddLine(ImVec2(x, lastTotalY), ImVec2(x, totalY), IM_COL32(255, 255, 255, 200));
        else if (lastTotalY >= 0) dl->AddLine(ImVec2(x - 1, totalY), ImVec2(x + 1, totalY), IM_COL32(255, 255, 255, 200));
        lastTotalY = totalY;
        ++local.memoryColumns;
      }
      flushRun();
      const float peakY = memBottom - static_cast<float>(t.peakTotal * scale);
      for (float x = x0; x < x0 + w; x += 8) dl->AddLine(ImVec2(x, peakY), ImVec2(x + 4, peakY), IM_COL32(255, 90, 90, 220));
      const std::string peak = "peak " + formatBytes(static_cast<double>(t.peakTotal));
      dl->AddText(ImVec2(x0 + w - ImGui::CalcTextSize(peak.c_str()).x - 4, std::max(peakY - ImGui::GetFontSize() - 1, y0)), IM_COL32(255, 120, 120, 255), peak.c_str());
      drawCapacity(dl, style.capacityBytes, t.peakDevice, scale, x0, w, y0, memBottom);
    }

    // --- compute and comm lanes: cull, fold narrow spans, draw ------------------------------------
    auto drawSpans = [&](const std::vector<Event>& spans, const std::vector<int64_t>& begins, double slack,
                         float laneY, bool comm) {
      size_t i = trace::firstSpanFrom(spans, beginAbs - slack);  // the widest span as slack
      float foldStart = -1, foldEnd = -1;
      int foldCount = 0;
      for (; i < spans.size() && spans[i].beginNs < endAbs; ++i) {
        const Event& e = spans[i];
        if (!comm && static_cast<trace::ComputeKind>(e.op) == trace::ComputeKind::Step) continue;
        if (e.endNs < beginAbs) continue;
        float xa = static_cast<float>(axis.toX(e.beginNs - originNs, x0, w));
        float xb = static_cast<float>(axis.toX(e.endNs - originNs, x0, w));
        if (xb - xa < style.foldPixels) {
          if (foldCount > 0 && xa - foldEnd < style.foldPixels) {
            foldEnd = std::max(foldEnd, xb);
            ++foldCount;
          } else {
            if (foldCount > 0) drawFold(dl, foldStart, foldEnd, laneY, laneY + style.spanLaneHeight, foldCount);
            foldStart = xa;
            foldEnd = xb;
            foldCount = 1;
          }
          ++local.spansFolded;
          // Skip everything that starts inside this pixel: it folds into the same block. A forward
          // search per pixel keeps the lane O(width x log n) however many spans hide there.
          const double skipTo = originNs + axis.toNs(xa + 1.0f, x0, w);
          const size_t jump =
              trace::firstNotBefore(begins, i + 1, [skipTo](int64_t begin) { return static_cast<double>(begin) < skipTo; });
          if (jump > i + 1) {
            // Spans in between may end later than this one: keep the fold's extent honest.
            foldEnd = std::max(foldEnd, xa + 1.0f);
            foldCount += static_cast<int>(jump - i - 1);
            local.spansFolded += static_cast<int>(jump - i - 1);
            i = jump - 1;
          }
          continue;
        }
        if (foldCount > 0) {
          drawFold(dl, foldStart, foldEnd, laneY, laneY + style.spanLaneHeight, foldCount);
          foldCount = 0;
        }
        ++local.spansDrawn;
        const ImU32 color = comm ? collectiveColor(static_cast<trace::CollectiveOp>(e.op))
                                 : computeColor(static_cast<trace::ComputeKind>(e.op));
        const ImVec2 a(xa, laneY + 1), b(xb, laneY + style.spanLaneHeight - 1);
        dl->AddRectFilled(a, b, color, 2.0f);
        const bool selected = comm && spansHaveSameTarget(e, selection);
        if (selected) {
          ++local.spansHighlighted;
          dl->AddRect(ImVec2(xa - 1, laneY - 1), ImVec2(xb + 1, laneY + style.spanLaneHeight + 1), IM_COL32(255, 255, 255, 255), 2.0f, 0, 2.0f);
        }
        std::string text;
        const std::string unit = comm ? trace::collectiveUnit(e) : e.text;
        if (comm) {
          text = std::string(collectiveShortName(static_cast<trace::CollectiveOp>(e.op))) + " " + unit + " " +
                 formatBytes(static_cast<double>(trace::collectiveSizeBytes(e)));
        } else {
          text = computeLabel(e) + unit;
        }
        if (ImGui::CalcTextSize(text.c_str()).x + 4 < xb - xa) {
          dl->AddText(ImVec2(xa + 2, laneY + 2), IM_COL32(15, 15, 20, 255), text.c_str());
        }
        const bool hovered = mouse.x >= xa && mouse.x <= xb && mouse.y >= laneY && mouse.y < laneY + style.spanLaneHeight &&
                             ImGui::IsWindowHovered();
        if (hovered) {
          ImGui::BeginTooltip();
          if (comm) {
            const auto op = static_cast<trace::CollectiveOp>(e.op);
            const double seconds = (e.endNs - e.beginNs) / 1e9;
            const double algbw = trace::algbwBytesPerSecond(trace::collectiveSizeBytes(e), seconds);
            ImGui::Text("%s %s  (%s, %s)", trace::collectiveOpName(op), unit.c_str(), stepText(e).c_str(),
                        trace::phaseName(static_cast<trace::Phase>(e.phase)));
            const std::string impl = trace::collectiveImplementation(e);
            if (impl != trace::collectiveOpName(op)) ImGui::Text("implemented as %s", impl.c_str());
            ImGui::Text("in %s, out %s, group of %d", formatBytes(static_cast<double>(e.bytes)).c_str(),
                        formatBytes(static_cast<double>(e.bytesOut)).c_str(), e.worldSize);
            const auto ring = trace::ringTrafficPerRank(op, e.worldSize, trace::collectiveSizeBytes(e));
            ImGui::Text("this rank sends %s and receives %s (ring schedule)",
                        formatBytes(static_cast<double>(ring.sentBytes)).c_str(),
                        formatBytes(static_cast<double>(ring.receivedBytes)).c_str());
            ImGui::Text("issued %s, took %s", formatDuration(e.issueNs - originNs).c_str(),
                        formatDuration(static_cast<double>(e.endNs - e.beginNs)).c_str());
            ImGui::Text("algbw %.3f GB/s, busbw %.3f GB/s", algbw / 1e9, algbw * trace::busbwFactor(op, e.worldSize) / 1e9);
            ImGui::TextDisabled("click: highlight this collective on every rank");
          } else {
            ImGui::Text("%s %s  (%s)",
                        trace::isRecomputation(e) ? "forward again (activation checkpointing)"
                                                  : trace::computeKindName(static_cast<trace::ComputeKind>(e.op)),
                        unit.c_str(),
                        stepText(e).c_str());
            ImGui::Text("%s, at %s", formatDuration(static_cast<double>(e.endNs - e.beginNs)).c_str(),
                        formatDuration(e.beginNs - originNs).c_str());
          }
          ImGui::EndTooltip();
          if (comm && ImGui::IsMouseClicked(0)) {
            selection.active = true;
            selection.op = e.op;
            selection.step = e.step;
            selection.unit = e.text;
            selection.phase = e.phase;
            selection.microBatch = e.microBatch;
          }
        }
      }
      if (foldCount > 0) drawFold(dl, foldStart, foldEnd, laneY, laneY + style.spanLaneHeight, foldCount);
    };
    drawSpans(t.compute, t.computeBegins, static_cast<double>(t.longestCompute), memBottom, false);
    drawSpans(t.collectives, t.collectiveBegins, static_cast<double>(t.longestCollective), memBottom + style.spanLaneHeight,
              true);
    drawExposedComm(dl, rec.exposedCommCached(r), axis, originNs, beginAbs, endAbs, x0, w,
                    memBottom + 2 * style.spanLaneHeight);

    drawPauses(dl, t.pauses, axis, originNs, beginAbs, endAbs, x0, w, memBottom, 2 * style.spanLaneHeight);

    // Step markers.
    for (const auto& s : t.steps) {
      if (s.beginNs < beginAbs || s.beginNs > endAbs) continue;
      const float x = static_cast<float>(axis.toX(s.beginNs - originNs, x0, w));
      dl->AddLine(ImVec2(x, y0), ImVec2(x, y0 + groupHeight - px(8.0f)), IM_COL32(255, 255, 255, 70));
      char stepLabel[16];
      std::snprintf(stepLabel, sizeof stepLabel, "s%d", s.step);
      dl->AddText(ImVec2(x + 2, y0 + 1), IM_COL32(200, 200, 210, 160), stepLabel);
    }
    dl->PopClipRect();

    // Hover over the memory lane: exact bytes per role at that time.
    if (ImGui::IsWindowHovered() && mouse.x >= x0 && mouse.x < x0 + w && mouse.y >= y0 && mouse.y < memBottom) {
      const double tNs = axis.toNs(mouse.x, x0, w);
      cursor.valid = true;
      cursor.tNs = tNs;
      cursor.rank = r;
      const auto bytes = memoryAt(rec, r, tNs);
      int64_t total = 0;
      for (auto b : bytes) total += b;
      ImGui::BeginTooltip();
      ImGui::Text("rank %d at %s: %s allocated", r, formatDuration(tNs).c_str(), formatBytes(static_cast<double>(total)).c_str());
      for (int role = kMemoryRoleCount - 1; role >= 0; --role) {
        ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(roleColor(static_cast<trace::MemoryRole>(role))),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(px(10), px(10)));
        ImGui::SameLine();
        ImGui::Text("%-16s %12lld B  (%s)", trace::memoryRoleName(static_cast<trace::MemoryRole>(role)),
                    static_cast<long long>(bytes[role]), formatBytes(static_cast<double>(bytes[role])).c_str());
      }
      ImGui::EndTooltip();
      dl->AddLine(ImVec2(mouse.x, y0), ImVec2(mouse.x, memBottom), IM_COL32(255, 255, 255, 120));
    }
  }

  if (playheadNs >= axis.beginNs && playheadNs <= axis.endNs) {
    const float x = static_cast<float>(axis.toX(playheadNs, x0, w));
    dl->AddLine(ImVec2(x, origin.y), ImVec2(x, origin.y + totalHeight), kPlayheadColor, px(2.0f));
    dl->AddTriangleFilled(ImVec2(x - 5, origin.y), ImVec2(x + 5, origin.y), ImVec2(x, origin.y + 7), kPlayheadColor);
  }
  // The time ruler places the playhead (click or drag); the rest zooms and pans.
  const bool onRuler = mouse.y >= origin.y && mouse.y < origin.y + ruler && mouse.x >= x0 && mouse.x < x0 + w;
  if (onRuler && ImGui::IsWindowHovered() && ImGui::IsMouseDown(0)) {
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
