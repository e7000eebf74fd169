#include "ui/diff_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <imgui.h>

#include "ui/column_peaks.h"
#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

constexpr ImU32 kGhostColor = IM_COL32(80, 240, 255, 255);
// Apart from every collective's own colour (an all-gather is orange, a reduce-scatter green).
constexpr ImU32 kWorseColor = IM_COL32(255, 70, 200, 255);
constexpr ImU32 kBetterColor = IM_COL32(90, 200, 255, 255);

// A's run on B's axis: its origin, and how much earlier it is drawn.
LaneFrame baselineFrame(const LaneFrame& f, const DiffOverlay& diff) {
  const int64_t origin = diff.baseline->originNs();
  return f.forRun(origin == INT64_MAX ? 0.0 : static_cast<double>(origin), diff.baselineShiftNs);
}

// Each column's total bytes (the column's highest sample's), or -1 where the lane has none yet.
std::vector<int64_t> columnTotals(const LaneFrame& f, const trace::RankTimeline& t, const TimelineStyle& style) {
  std::vector<int64_t> out(static_cast<size_t>(f.width), -1);
  if (t.memory.empty()) return out;
  std::vector<size_t> found;
  const std::vector<size_t>& columns = laneColumns(f, t.memory, t.memoryTotals, style, found);
  for (size_t c = 0; c < columns.size() && c < out.size(); ++c) {
    if (columns[c] != kNoSample) out[c] = t.memoryTotals.value(columns[c]);
  }
  return out;
}

// At the lane's foot, right: its top holds the step labels and the peak.
void laneNote(const LaneFrame& f, float y, float height, const std::string& text) {
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  const ImVec2 at(f.x0 + f.width - size.x - 6, y + height - size.y - 2);
  f.drawList->AddRectFilled(ImVec2(at.x - 3, at.y), ImVec2(at.x + size.x + 3, at.y + size.y),
                            IM_COL32(20, 22, 28, 200));
  f.drawList->AddText(at, kGhostColor, text.c_str());
  if (itemProbeOn()) noteText("lane-text:diff@" + std::to_string(y) + ":" + text, at.x, at.y, text.c_str());
}

}  // namespace

int drawMemoryGhost(const LaneFrame& f, const trace::RankTimeline& a, const DiffOverlay& diff, float y, float height,
                    double scaleBytes, const TimelineStyle& style) {
  if (scaleBytes <= 0) return 0;
  const std::vector<int64_t> totals = columnTotals(baselineFrame(f, diff), a, style);
  const double scale = laneScale(height, scaleBytes);  // as B's own total line
  const float bottom = y + height;
  float lastY = -1;
  int drawn = 0;
  for (size_t c = 0; c < totals.size(); ++c) {
    if (totals[c] < 0) {
      lastY = -1;
      continue;
    }
    const float x = f.x0 + static_cast<float>(c);
    const float ghostY = std::floor(bottom - static_cast<float>(static_cast<double>(totals[c]) * scale));
    const float top = lastY >= 0 ? std::min(lastY, ghostY) : ghostY;
    const float low = lastY >= 0 ? std::max(lastY, ghostY) : ghostY;
    f.drawList->AddRectFilled(ImVec2(x, top - 1), ImVec2(x + 1, low + 1), kGhostColor);
    lastY = ghostY;
    ++drawn;
  }
  laneNote(f, y, height, "outline: A's total (D: B - A)");
  return drawn;
}

int drawMemoryDifference(const LaneFrame& f, const trace::RankTimeline& a, const trace::RankTimeline& b,
                         const DiffOverlay& diff, float y, float height, const TimelineStyle& style) {
  f.drawList->AddRectFilled(ImVec2(f.x0, y), ImVec2(f.x0 + f.width, y + height), laneBackground());
  const std::vector<int64_t> totalsA = columnTotals(baselineFrame(f, diff), a, style);
  const std::vector<int64_t> totalsB = columnTotals(f, b, style);
  int64_t largest = 0;
  for (size_t c = 0; c < totalsB.size(); ++c) {
    if (totalsA[c] >= 0 && totalsB[c] >= 0) largest = std::max<int64_t>(largest, std::llabs(totalsB[c] - totalsA[c]));
  }
  const float middle = std::round(y + height / 2);
  f.drawList->AddLine(ImVec2(f.x0, middle), ImVec2(f.x0 + f.width, middle), IM_COL32(255, 255, 255, 60));
  int drawn = 0;
  const double scale = largest > 0 ? (height / 2 - 2) / (1.1 * static_cast<double>(largest)) : 0;
  for (size_t c = 0; c < totalsB.size() && scale > 0; ++c) {
    if (totalsA[c] < 0 || totalsB[c] < 0 || totalsA[c] == totalsB[c]) continue;
    const double delta = static_cast<double>(totalsB[c] - totalsA[c]);
    const float x = f.x0 + static_cast<float>(c);
    const float end = middle - static_cast<float>(delta * scale);
    f.drawList->AddRectFilled(ImVec2(x, std::min(middle, end)), ImVec2(x + 1, std::max(middle, end) + 1),
                              delta > 0 ? kWorseColor : kBetterColor);
    ++drawn;
  }
  laneNote(f, y, height,
           largest > 0 ? "B - A: up, B holds more; +-" + formatBytes(1.1 * static_cast<double>(largest)) +
                             " at the edges (D: A's outline)"
                       : "B - A: no difference in view (D: A's outline)");
  return drawn;
}

int drawDiffMarks(const LaneFrame& f, const std::vector<stats::DiffMark>& marks, int rank, float y, float height) {
  int drawn = 0;
  const auto first =
      std::lower_bound(marks.begin(), marks.end(), rank, [](const stats::DiffMark& m, int r) { return m.rank < r; });
  const float thick = px(2.0f);
  for (auto it = first; it != marks.end() && it->rank == rank && it->beginNs < f.endAbs; ++it) {
    if (it->endNs < f.beginAbs) continue;
    ++drawn;
    const float xa = f.toX(static_cast<double>(it->beginNs));
    const float xb = std::max(xa + 2.0f, f.toX(static_cast<double>(it->endNs)));
    const ImU32 color = it->worse ? kWorseColor : kBetterColor;
    f.drawList->AddRect(ImVec2(xa, y), ImVec2(xb, y + height), color, 0.0f, 0, thick);
    // A notch above it, up where it got worse, down where better: seen when the span is a pixel.
    const float mid = (xa + xb) / 2, h = px(5.0f);
    if (it->worse) {
      f.drawList->AddTriangleFilled(ImVec2(mid - h, y), ImVec2(mid + h, y), ImVec2(mid, y - h), color);
    } else {
      f.drawList->AddTriangleFilled(ImVec2(mid - h, y - h), ImVec2(mid + h, y - h), ImVec2(mid, y), color);
    }
    const ImVec2 size = ImGui::CalcTextSize(it->change.c_str());
    if (xb - xa > size.x + 8) {
      f.drawList->AddText(ImVec2(xb - size.x - 3, y + height - size.y), color, it->change.c_str());
    }
    if (f.mouseIn(y, height) && f.mouse.x >= xa && f.mouse.x < xb) {
      ImGui::BeginTooltip();  // under the collective's own lines
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(color), "B against A: %s per step (%s)", it->change.c_str(),
                         it->worse ? "slower or larger" : "faster or smaller");
      ImGui::EndTooltip();
    }
  }
  return drawn;
}

}  // namespace shardscope::ui
