#include "ui/throughput_lane.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <imgui.h>

#include "trace/format.h"
#include "stats/run_stats.h"
#include "ui/theme.h"

namespace shardscope::ui {

ThroughputWork throughputWorkOf(const config::RunConfig& config, int64_t parameterCount,
                                const stats::DeviceFacts& device) {
  ThroughputWork w;
  w.itemsPerRankStep = stats::itemsPerRankStep(config);
  w.itemName = config.model == config::ModelKind::Gpt ? "tokens" : "samples";
  w.flopsPerItem = stats::modelFlopsPerItem(config, parameterCount);
  const auto limits = stats::deviceLimitsOf(config, device);
  w.peakFlops = limits.peakFlops;
  w.peakNote = limits.peakNote;
  return w;
}

namespace {

struct StepRate {
  const trace::Event* step;
  double seconds, itemsPerSecond, mfu;
};

constexpr ImU32 kBarColor = IM_COL32(84, 162, 75, 200);
constexpr float kNarrowestLabel = 40.0f;  // px: no step's label fits in less

// "1.20 ms  3.4k tokens/s  MFU 12.00%" on a step's bar, where it fits within `room` px.
void drawRateLabel(ImDrawList* dl, const StepRate& r, const ThroughputWork& work, ImVec2 at, float room) {
  std::string text = trace::formatDuration(r.seconds * 1e9) + "  " +
                     trace::formatRate(r.itemsPerSecond, (std::string(work.itemName) + "/s").c_str());
  if (work.peakFlops > 0) {
    char mfu[32];
    std::snprintf(mfu, sizeof mfu, "  MFU %.2f%%", 100.0 * r.mfu);
    text += mfu;
  }
  if (ImGui::CalcTextSize(text.c_str()).x + 6 < room) dl->AddText(at, IM_COL32(235, 235, 240, 255), text.c_str());
}

}  // namespace

float drawThroughputLane(const trace::RunRecording& rec, const TimeAxis& axis, float width, const ThroughputWork& work,
                         double shiftNs) {
  if (rec.ranks() == 0 || rec.rank(0).steps.empty() || work.itemsPerRankStep <= 0) return 0;
  std::vector<StepRate> rates;
  double highest = 0;
  for (const auto& step : rec.rank(0).steps) {
    const double seconds = static_cast<double>(trace::activeStepNs(step)) / 1e9;  // without the gate's pauses
    if (seconds <= 0) continue;
    const double rate = work.itemsPerRankStep / seconds;
    const double mfu = work.peakFlops > 0 ? rate * work.flopsPerItem / work.peakFlops : 0;
    rates.push_back({&step, seconds, rate, mfu});
    highest = std::max(highest, rate);
  }
  const float height = px(30.0f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float x0 = origin.x + timelineLabelWidth();
  const float w = std::max(width - timelineLabelWidth(), 10.0f);
  const double originNs = (rec.originNs() == INT64_MAX ? 0.0 : static_cast<double>(rec.originNs())) + shiftNs;
  dl->AddText(ImVec2(origin.x + 4, origin.y + 2), laneLabelColor(), work.itemName[0] == 't' ? "tokens/s" : "samples/s");
  dl->AddText(ImVec2(origin.x + 4, origin.y + 2 + ImGui::GetFontSize()), laneLabelColor(), "rank 0");
  dl->PushClipRect(ImVec2(x0, origin.y), ImVec2(x0 + w, origin.y + height), true);
  dl->AddRectFilled(ImVec2(x0, origin.y), ImVec2(x0 + w, origin.y + height), laneBackground());
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const StepRate* hovered = nullptr;
  // Steps narrower than a pixel column share it: one bar at their highest rate (a long run's
  // 20,000 steps drew 20,000 bars and formatted 20,000 labels a frame).
  float columnX = -1, columnTop = 0;
  auto flushColumn = [&] {
    if (columnX >= 0) dl->AddRectFilled(ImVec2(columnX, columnTop), ImVec2(columnX + 1, origin.y + height), kBarColor);
    columnX = -1;
  };
  const auto first =
      std::lower_bound(rates.begin(), rates.end(), axis.toNs(x0, x0, w) + originNs,
                       [](const StepRate& r, double t) { return static_cast<double>(r.step->endNs) < t; });
  for (auto it = first; it != rates.end(); ++it) {
    const StepRate& r = *it;
    const float xa = static_cast<float>(axis.toX(static_cast<double>(r.step->beginNs) - originNs, x0, w));
    const float xb = static_cast<float>(axis.toX(static_cast<double>(r.step->endNs) - originNs, x0, w));
    if (xa > x0 + w) break;
    if (xb < x0) continue;
    const float top = origin.y + height - static_cast<float>(r.itemsPerSecond / highest) * (height - 4);
    if (mouse.x >= xa && mouse.x < xb && mouse.y >= origin.y && mouse.y < origin.y + height) hovered = &r;
    if (xb - xa < 2.0f) {
      const float column = std::floor(xa);
      if (column != columnX) {
        flushColumn();
        columnX = column;
        columnTop = top;
      }
      columnTop = std::min(columnTop, top);
      continue;
    }
    flushColumn();
    dl->AddRectFilled(ImVec2(xa + 1, top), ImVec2(std::max(xa + 2, xb - 1), origin.y + height), kBarColor);
    if (xb - xa > kNarrowestLabel) drawRateLabel(dl, r, work, ImVec2(xa + 4, origin.y + 2), xb - xa);
  }
  flushColumn();
  dl->PopClipRect();
  ImGui::Dummy(ImVec2(width, height));
  if (hovered && ImGui::IsWindowHovered()) {
    ImGui::BeginTooltip();
    ImGui::Text("step %d on rank 0: %s (without the step gate's pauses)", hovered->step->step,
                trace::formatDuration(hovered->seconds * 1e9).c_str());
    ImGui::Text("%s per rank, %.3g model FLOP/s",
                trace::formatRate(hovered->itemsPerSecond, (std::string(work.itemName) + "/s").c_str()).c_str(),
                hovered->itemsPerSecond * work.flopsPerItem);
    if (work.peakFlops > 0) {
      ImGui::Text("MFU %.2f%% of %s", 100.0 * hovered->mfu, work.peakNote.c_str());
    } else {
      ImGui::TextDisabled("no MFU: state the device's peak with --peak-tflops (GPU ranks measure their own)");
    }
    ImGui::EndTooltip();
  }
  return height;
}

}  // namespace shardscope::ui
