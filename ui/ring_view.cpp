#include "ui/ring_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "trace/format.h"
#include "trace/ring_schedule.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

ImVec2 lerp(ImVec2 a, ImVec2 b, float t) { return ImVec2(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t); }

// A chunk's colour by how much of it a rank holds: nothing, part of the sum, all of it.
ImU32 chunkColor(const trace::RingSchedule& s, int contributions) {
  if (contributions <= 0) return IM_COL32(45, 48, 55, 255);
  if (contributions >= s.ranks) return collectiveColor(s.op);
  const int alpha = 70 + 150 * contributions / s.ranks;
  const ImU32 base = collectiveColor(s.op) & 0x00FFFFFF;
  return base | (static_cast<ImU32>(alpha) << 24);
}

std::string phaseText(const trace::RingSchedule& s, int step) {
  const int total = static_cast<int>(s.steps.size());
  if (step >= total) return "done: every rank holds its result";
  char text[96];
  if (s.op == trace::CollectiveOp::AllReduce) {
    const bool reducing = step < s.reduceSteps;
    std::snprintf(text, sizeof text, "step %d of %d: %s phase (receiver %s)", step + 1, total,
                  reducing ? "reduce-scatter" : "all-gather", reducing ? "adds" : "copies");
  } else {
    std::snprintf(text, sizeof text, "step %d of %d (receiver %s)", step + 1, total,
                  s.op == trace::CollectiveOp::ReduceScatter ? "adds" : "copies");
  }
  return text;
}

}  // namespace

void drawRingAnimation(const trace::Event& c, const std::string& backend, double progress,
                       const std::string& timingNote, float width, float height, RingFrameStats* stats) {
  RingFrameStats local;
  const auto op = static_cast<trace::CollectiveOp>(c.op);
  const trace::RingSchedule s = trace::ringSchedule(op, c.worldSize, trace::collectiveSizeBytes(c));
  ImGui::Text("%s %s  (step %d, %s)", trace::collectiveOpName(op), trace::collectiveUnit(c).c_str(), c.step,
              trace::phaseName(static_cast<trace::Phase>(c.phase)));
  if (!s.animatable()) {
    ImGui::TextDisabled("a %s among %d rank(s) moves no chunks around a ring: nothing to animate.",
                        trace::collectiveOpName(op), c.worldSize);
    if (stats) *stats = local;
    return;
  }
  local.steps = static_cast<int>(s.steps.size());
  local.bytesSentPerRank = s.bytesSentPerRank();
  const double clamped = std::clamp(progress, 0.0, static_cast<double>(local.steps));
  local.stepsDone = static_cast<int>(std::floor(clamped));
  const float within = static_cast<float>(clamped - local.stepsDone);
  ImGui::Text("size %s (as nccl-tests counts it), %d ranks, chunks of %s", trace::formatBytes(static_cast<double>(s.sizeBytes)).c_str(),
              s.ranks, trace::formatBytes(static_cast<double>(s.chunkBytes)).c_str());
  ImGui::Text("each rank sends %s and receives as much: %s x size", trace::formatBytes(static_cast<double>(local.bytesSentPerRank)).c_str(),
              s.op == trace::CollectiveOp::AllReduce ? "2(N-1)/N" : "(N-1)/N");
  ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "%s", phaseText(s, local.stepsDone).c_str());
  ImGui::TextDisabled("Schedule: the textbook ring (Patarasuk & Yuan). Ran on %s as %s, which may use another",
                      backend.empty() ? "the recorded backend" : backend.c_str(), trace::collectiveImplementation(c).c_str());
  ImGui::TextDisabled("algorithm; the ring moves the fewest bytes per rank. Timing: %s.", timingNote.c_str());

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float areaHeight = std::max(120.0f, height - (top.y - ImGui::GetWindowPos().y) + ImGui::GetScrollY() - 8.0f);
  const float h = std::min(areaHeight, height);
  const ImVec2 center(top.x + width / 2, top.y + h / 2);
  const float radius = std::max(40.0f, std::min(width, h) / 2 - 40.0f);
  const auto holdings = trace::ringHoldingsAfter(s, local.stepsDone);
  std::vector<ImVec2> node(static_cast<size_t>(s.ranks));
  for (int r = 0; r < s.ranks; ++r) {
    const float angle = -1.5707963f + 6.2831853f * static_cast<float>(r) / static_cast<float>(s.ranks);
    node[static_cast<size_t>(r)] = ImVec2(center.x + radius * std::cos(angle), center.y + radius * std::sin(angle));
  }
  dl->AddCircle(center, radius, IM_COL32(255, 255, 255, 40), 64, 1.5f);
  const float chunkW = std::clamp(120.0f / static_cast<float>(s.ranks), 8.0f, 26.0f), chunkH = 14.0f;
  // The step in progress: each rank's chunk on its way to the right neighbour.
  if (local.stepsDone < local.steps) {
    for (const auto& t : s.steps[static_cast<size_t>(local.stepsDone)]) {
      const ImVec2 a = node[static_cast<size_t>(t.from)], b = node[static_cast<size_t>(t.to)];
      dl->AddLine(a, b, IM_COL32(255, 220, 90, 120), 2.0f);
      const ImVec2 p = lerp(a, b, within);
      const int sent = holdings[static_cast<size_t>(t.from)][static_cast<size_t>(t.chunk)];
      dl->AddRectFilled(ImVec2(p.x - chunkW / 2, p.y - chunkH / 2), ImVec2(p.x + chunkW / 2, p.y + chunkH / 2), chunkColor(s, sent), 2.0f);
      dl->AddRect(ImVec2(p.x - chunkW / 2, p.y - chunkH / 2), ImVec2(p.x + chunkW / 2, p.y + chunkH / 2), IM_COL32(255, 220, 90, 255), 2.0f);
      char label[8];
      std::snprintf(label, sizeof label, "%d", t.chunk);
      dl->AddText(ImVec2(p.x + chunkW / 2 + 2, p.y - 7), IM_COL32(255, 220, 90, 255), label);
      ++local.transfersDrawn;
    }
  }
  // Each rank with its chunks: bright when complete, faint while partly reduced, dark when absent.
  for (int r = 0; r < s.ranks; ++r) {
    const ImVec2 n = node[static_cast<size_t>(r)];
    const float rowW = chunkW * static_cast<float>(s.ranks);
    const ImVec2 a(n.x - rowW / 2, n.y - chunkH / 2);
    dl->AddRectFilled(ImVec2(a.x - 6, a.y - 20), ImVec2(a.x + rowW + 6, a.y + chunkH + 6), IM_COL32(22, 24, 28, 235), 4.0f);
    char label[16];
    std::snprintf(label, sizeof label, "rank %d", r);
    dl->AddText(ImVec2(a.x - 2, a.y - 18), IM_COL32(230, 230, 235, 255), label);
    for (int k = 0; k < s.ranks; ++k) {
      const ImVec2 ca(a.x + chunkW * static_cast<float>(k), a.y);
      dl->AddRectFilled(ImVec2(ca.x + 1, ca.y), ImVec2(ca.x + chunkW - 1, ca.y + chunkH),
                        chunkColor(s, holdings[static_cast<size_t>(r)][static_cast<size_t>(k)]), 2.0f);
    }
  }
  ImGui::Dummy(ImVec2(width, h));
  if (stats) *stats = local;
}

}  // namespace shardscope::ui
