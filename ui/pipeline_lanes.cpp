#include "ui/pipeline_lanes.h"

#include <algorithm>
#include <string>

#include "trace/format.h"
#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

using config::PipeActionKind;

ImU32 actionColor(const config::PipeAction& a, bool planned) {
  static const ImVec4 hues[] = {{0.30f, 0.60f, 0.95f, 1}, {0.95f, 0.55f, 0.20f, 1}, {0.35f, 0.78f, 0.40f, 1},
                                {0.90f, 0.35f, 0.40f, 1}, {0.65f, 0.50f, 0.90f, 1}, {0.60f, 0.45f, 0.35f, 1},
                                {0.90f, 0.50f, 0.80f, 1}, {0.55f, 0.60f, 0.60f, 1}, {0.80f, 0.80f, 0.30f, 1},
                                {0.30f, 0.80f, 0.85f, 1}};
  ImVec4 c = hues[a.microBatch % 10];
  const float shade = a.kind == PipeActionKind::Forward          ? 1.0f
                      : a.kind == PipeActionKind::BackwardWeight ? 0.8f
                                                                 : 0.62f;
  c.x *= shade, c.y *= shade, c.z *= shade;
  c.w = planned ? 0.55f : 1.0f;
  return ImGui::ColorConvertFloat4ToU32(c);
}

PipelineLanes pipelineLanesOf(const Session& s) {
  PipelineLanes lanes;
  if (s.config.pp <= 1 || s.fromSummary) return lanes;
  for (int r = 0; r < s.recording.ranks(); ++r) {
    lanes.actions.push_back(stats::measuredActions(s.recording.rank(r)));
    lanes.held.push_back(stats::activationsHeld(lanes.actions.back(), &s.recording.rank(r)));
    for (const auto& h : lanes.held.back()) lanes.most = std::max(lanes.most, h.microBatches);
  }
  return lanes;
}

void shareHeldScale(std::vector<PipelineLanes>& sessions) {
  int most = 0;
  for (const auto& s : sessions) most = std::max(most, s.most);
  for (auto& s : sessions) s.scale = most;
}

int drawActionLane(const LaneFrame& f, const std::vector<stats::MeasuredAction>& actions, float y, float height) {
  const auto first = std::lower_bound(actions.begin(), actions.end(), f.beginAbs,
                                      [](const stats::MeasuredAction& a, double t) { return a.endNs < t; });
  int drawn = 0;
  for (auto it = first; it != actions.end() && it->beginNs < f.endAbs; ++it) {
    if (!config::isComputeAction(it->action.kind)) continue;
    const float xa = f.toX(static_cast<double>(it->beginNs));
    const float xb = std::max(xa + 1.0f, f.toX(static_cast<double>(it->endNs)));
    f.drawList->AddRectFilled(ImVec2(xa, y + 1), ImVec2(xb, y + height - 1), actionColor(it->action));
    ++drawn;
    const std::string text = config::actionText(it->action);
    if (ImGui::CalcTextSize(text.c_str()).x + px(4) < xb - xa) {
      f.drawList->AddText(ImVec2(xa + px(2), y + (height - ImGui::GetTextLineHeight()) / 2), IM_COL32(15, 15, 20, 255),
                          text.c_str());
    }
    if (f.mouseIn(y, height) && f.mouse.x >= xa && f.mouse.x < xb) {
      ImGui::SetTooltip("%s: stage %d, micro-batch %d, step %d\nfrom its event group to the next: %s, computing %s",
                        text.c_str(), it->action.stage, it->action.microBatch, it->step,
                        formatDuration(static_cast<double>(it->endNs - it->beginNs)).c_str(),
                        formatDuration(static_cast<double>(it->computeNs)).c_str());
    }
  }
  return drawn;
}

namespace {

// One stretch of the held lane from xa to xb: a band per micro-batch held, one unit of `scale`
// tall, stacked in micro-batch order, each in its micro-batch's colour (as its action cells).
void drawHeldStretch(const LaneFrame& f, const stats::HeldAt& h, int scale, float xa, float xb, float y, float height) {
  const float unit = (height - 2) / static_cast<float>(scale);
  const float gap = unit >= px(5) ? 1.0f : 0.0f;  // a line between bands where they are tall enough to part
  float bottom = y + height;
  for (const auto& b : h.batches) {
    f.drawList->AddRectFilled(ImVec2(xa, bottom - unit + gap), ImVec2(xb, bottom),
                              actionColor({PipeActionKind::Forward, 0, b.microBatch}));
    bottom -= unit;
  }
}

// Under the mouse: which micro-batches the rank holds there, and what each one's forwards left held.
void heldTooltip(const stats::HeldAt& h) {
  std::string which;
  for (const auto& b : h.batches) {
    which += "\n  micro-batch " + std::to_string(b.microBatch) +
             (b.bytes > 0 ? ": " + trace::formatBytes(static_cast<double>(b.bytes)) + " its forwards left held" : "");
  }
  ImGui::SetTooltip("activations of %d micro-batch%s held%s", h.microBatches, h.microBatches == 1 ? "" : "es",
                    which.c_str());
}

}  // namespace

int drawHeldLane(const LaneFrame& f, const std::vector<stats::HeldAt>& held, int scale, float y, float height) {
  f.drawList->AddRectFilled(ImVec2(f.x0, y), ImVec2(f.x0 + f.width, y + height), IM_COL32(255, 255, 255, 10));
  if (scale <= 0 || held.empty()) return 0;
  const auto first =
      std::upper_bound(held.begin(), held.end(), f.beginAbs, [](double t, const stats::HeldAt& h) { return t < h.ns; });
  int drawn = 0, peak = 0;
  for (auto it = first == held.begin() ? first : first - 1; it != held.end() && it->ns < f.endAbs; ++it) {
    const double until = it + 1 != held.end() ? static_cast<double>((it + 1)->ns) : f.endAbs;
    const float xa = std::max(f.x0, f.toX(static_cast<double>(it->ns)));
    const float xb = std::min(f.x0 + f.width, f.toX(until));
    if (it->microBatches > 0 && xb > xa) drawHeldStretch(f, *it, scale, xa, xb, y, height);
    if (f.mouseIn(y, height) && f.mouse.x >= xa && f.mouse.x < xb && it->microBatches > 0) heldTooltip(*it);
    peak = std::max(peak, it->microBatches);
    ++drawn;
  }
  const std::string text = "activations of up to " + std::to_string(peak) + " micro-batch" + (peak == 1 ? "" : "es") +
                           " (top: " + std::to_string(scale) + ")";
  const ImVec2 at(f.x0 + f.width - ImGui::CalcTextSize(text.c_str()).x - 4, y);
  f.drawList->AddText(at, IM_COL32(220, 220, 230, 230), text.c_str());
  if (itemProbeOn()) noteText("lane-text:held@" + std::to_string(y) + ":" + text, at.x, at.y, text.c_str());
  return drawn;
}

void drawHeldMicroBatches(ImDrawList* dl, ImVec2 a, ImVec2 b, const std::map<std::pair<int, int>, int64_t>& held,
                          int microBatches, int rank) {
  dl->AddRectFilled(a, b, IM_COL32(26, 28, 33, 255), 3.0f);
  if (microBatches <= 0) return;
  std::set<int> batches;
  int64_t bytes = 0;
  for (const auto& [key, left] : held) {
    batches.insert(key.second);
    bytes += left;
  }
  const float gap = px(2.0f), top = a.y + ImGui::GetFontSize() + 2;
  const float box = std::max(2.0f, (b.x - a.x - 8 - gap * static_cast<float>(microBatches - 1)) / microBatches);
  // The bytes are the allocator's, measured over each forward: shown where memory was recorded.
  const std::string count = std::to_string(batches.size()) + " of " + std::to_string(microBatches) +
                            (bytes > 0 ? ", " + trace::formatBytes(static_cast<double>(bytes)) : "");
  dl->AddText(ImVec2(a.x + 4, a.y), IM_COL32(200, 200, 210, 255), count.c_str());
  for (int mb = 0; mb < microBatches; ++mb) {
    const ImVec2 p(a.x + 4 + static_cast<float>(mb) * (box + gap), top);
    const ImVec2 q(p.x + box, std::max(top + 2, b.y - 2));
    const ImU32 color = actionColor({PipeActionKind::Forward, 0, mb});
    if (batches.count(mb)) {
      dl->AddRectFilled(p, q, color);
    } else {
      dl->AddRect(p, q, color);
    }
  }
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
    std::string which;
    for (const auto& [key, left] : held) {
      which += "\n  micro-batch " + std::to_string(key.second) + " on stage " + std::to_string(key.first) +
               (left > 0 ? ": " + trace::formatBytes(static_cast<double>(left)) + " its forward left held" : "");
    }
    ImGui::SetTooltip("rank %d holds the activations of %zu of %d micro-batches%s", rank, batches.size(), microBatches,
                      which.empty() ? " (none)" : which.c_str());
  }
}

}  // namespace shardscope::ui
