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

// A chunk as a gauge: filled from the bottom by the share of the ranks' contributions it holds
// (an all-reduce's partial sums grow step by step), outlined once it holds all of them.
void drawChunk(ImDrawList* dl, const trace::RingSchedule& s, int contributions, ImVec2 a, ImVec2 b) {
  dl->AddRectFilled(a, b, IM_COL32(45, 48, 55, 255), 2.0f);
  if (contributions > 0) {
    const float share = static_cast<float>(std::min(contributions, s.ranks)) / static_cast<float>(s.ranks);
    dl->AddRectFilled(ImVec2(a.x, b.y - (b.y - a.y) * share), b, collectiveColor(s.op), 2.0f);
  }
  if (contributions >= s.ranks) dl->AddRect(a, b, IM_COL32(255, 255, 255, 220), 2.0f, 0, 1.5f);
}

// A rank's progress toward what it ends with, 0..1: all-gather's chunks received, all-reduce's
// sums growing then copied, reduce-scatter's own chunk filling (its other chunks it passes on).
double progressToward(const std::vector<int>& held, const std::vector<int>& ends) {
  int64_t got = 0, total = 0;
  for (size_t k = 0; k < ends.size(); ++k) {
    got += std::min(held[k], ends[k]);
    total += ends[k];
  }
  return total > 0 ? static_cast<double>(got) / static_cast<double>(total) : 1.0;
}

// A rank's chunks together as one gauge (rings past kRingRanksChunkByChunk ranks): filled by its
// progress, outlined once it holds all it ends with.
void drawGauge(ImDrawList* dl, const trace::RingSchedule& s, double progress, ImVec2 a, ImVec2 b) {
  dl->AddRectFilled(a, b, IM_COL32(45, 48, 55, 255), 2.0f);
  if (progress > 0) {
    dl->AddRectFilled(ImVec2(a.x, b.y - (b.y - a.y) * static_cast<float>(progress)), b, collectiveColor(s.op), 2.0f);
  }
  if (progress >= 1.0) dl->AddRect(a, b, IM_COL32(255, 255, 255, 220), 2.0f, 0, 1.5f);
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

namespace {

// What the collective is and moves, the phase the ring is in, and what the picture shows: the
// ranks of its group, in the group's order.
std::vector<int> drawRingText(const trace::CollectiveSpan& c, int rank, const trace::RingSchedule& s, int worldRanks,
                              int tensorRanks, const std::string& backend, const std::string& timingNote,
                              const RingFrameStats& local) {
  if (c.sizeUnknown) {  // a kernel known by its name alone: the ring's steps, no bytes to give them
    ImGui::TextWrapped("size not recorded in its trace, %d ranks: the ring's steps without their bytes", s.ranks);
  } else {
    ImGui::TextWrapped("size %s (as nccl-tests counts it), %d ranks, chunks of %s",
                       trace::formatBytes(static_cast<double>(s.sizeBytes)).c_str(), s.ranks,
                       trace::formatBytes(static_cast<double>(s.chunkBytes)).c_str());
  }
  const auto group = static_cast<trace::ProcessGroup>(c.processGroup);
  std::vector<int> members = trace::processGroupMembers(group, rank, s.ranks, worldRanks, tensorRanks);
  if (group != trace::ProcessGroup::World) {
    std::string ranks;
    for (int m : members) ranks += (ranks.empty() ? "" : ", ") + std::to_string(m);
    const bool tensorMesh = group == trace::ProcessGroup::Tensor || group == trace::ProcessGroup::Data;
    ImGui::TextWrapped("in rank %d's %s group (%s): ranks %s", rank, trace::processGroupName(group),
                       tensorMesh ? "--tp mesh" : "HSDP", ranks.c_str());
  }
  const std::string sent =
      c.sizeUnknown ? std::string("an unrecorded") : trace::formatBytes(static_cast<double>(local.bytesSentPerRank));
  ImGui::TextWrapped("each rank sends %s and receives as much: %s x size", sent.c_str(),
                     s.op == trace::CollectiveOp::AllReduce ? "2(N-1)/N" : "(N-1)/N");
  ImGui::PushTextWrapPos(0.0f);  // the panel is narrow beside the grid, and narrower at projector scale
  ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "%s", phaseText(s, local.stepsDone).c_str());
  ImGui::PopTextWrapPos();
  if (s.ranks > kRingRanksChunkByChunk) {
    wrappedHint(
        "%d ranks: each box a rank's chunks together, filled as it gathers what it ends with; "
        "outlined when complete (chunk by chunk up to %d ranks)",
        s.ranks, kRingRanksChunkByChunk);
  } else {
    wrappedHint("each box a chunk, filled by the share of the ranks' data it holds; outlined when complete");
  }
  wrappedHint(
      "Schedule: the textbook ring (Patarasuk & Yuan). Ran on %s as %s, which may use another "
      "algorithm; the ring moves the fewest bytes per rank. Timing: %s.",
      backend.empty() ? "the recorded backend" : backend.c_str(), trace::collectiveImplementation(c).c_str(),
      timingNote.c_str());
  return members;
}

// Where the ring is drawn, and how big a chunk is.
struct RingGeometry {
  ImDrawList* dl;
  ImVec2 center;
  float radius;
  std::vector<ImVec2> node;  // each rank's place on the circle
  bool compact;              // past kRingRanksChunkByChunk ranks: a gauge per rank, not its chunks
  float chunkW, chunkH;
};

// Each rank's chunks (or its gauge): what it holds after the steps done.
void drawRingRanks(const RingGeometry& g, const trace::RingSchedule& s, const std::vector<int>& members,
                   const std::vector<std::vector<int>>& holdings, const std::vector<std::vector<int>>& finalHoldings,
                   RingFrameStats& local) {
  ImDrawList* dl = g.dl;
  const ImVec2 center = g.center;
  const float radius = g.radius, chunkW = g.chunkW, chunkH = g.chunkH;
  const bool compact = g.compact;
  const auto& node = g.node;
  const int labelEvery = compact ? (s.ranks + 15) / 16 : 1;
  for (int r = 0; r < s.ranks; ++r) {
    const ImVec2 n = node[static_cast<size_t>(r)];
    const auto& held = holdings[static_cast<size_t>(r)];
    if (compact) {
      const double progress = progressToward(held, finalHoldings[static_cast<size_t>(r)]);
      drawGauge(dl, s, progress, ImVec2(n.x - chunkW / 2, n.y - chunkH / 2),
                ImVec2(n.x + chunkW / 2, n.y + chunkH / 2));
      local.meanProgress += progress / s.ranks;
      local.ranksComplete += progress >= 1.0 ? 1 : 0;
      if (r % labelEvery == 0) {
        char label[16];
        std::snprintf(label, sizeof label, "%d", members[static_cast<size_t>(r)]);
        const float out = px(16.0f);
        const ImVec2 dir((n.x - center.x) / radius, (n.y - center.y) / radius);
        dl->AddText(ImVec2(n.x + dir.x * out - px(6), n.y + dir.y * out - px(7)), IM_COL32(200, 200, 210, 255), label);
      }
      continue;
    }
    const float rowW = chunkW * static_cast<float>(s.ranks);
    const ImVec2 a(n.x - rowW / 2, n.y - chunkH / 2);
    dl->AddRectFilled(ImVec2(a.x - px(6), a.y - ImGui::GetFontSize() - px(7)),
                      ImVec2(a.x + rowW + px(6), a.y + chunkH + ImGui::GetFontSize() + px(5)),
                      IM_COL32(22, 24, 28, 235), 4.0f);
    char label[16];
    std::snprintf(label, sizeof label, "rank %d", members[static_cast<size_t>(r)]);
    dl->AddText(ImVec2(a.x - 2, a.y - ImGui::GetFontSize() - px(5)), IM_COL32(230, 230, 235, 255), label);
    for (int k = 0; k < s.ranks; ++k) {
      const ImVec2 ca(a.x + chunkW * static_cast<float>(k), a.y);
      drawChunk(dl, s, holdings[static_cast<size_t>(r)][static_cast<size_t>(k)], ImVec2(ca.x + 2, ca.y),
                ImVec2(ca.x + chunkW - 2, ca.y + chunkH));
      char index[8];
      std::snprintf(index, sizeof index, "%d", k);
      dl->AddText(ImVec2(ca.x + 3, ca.y + chunkH + 1), IM_COL32(150, 150, 160, 255), index);
    }
  }
}

// The step in progress, on top: each rank's chunk on its way to the right neighbour.
void drawRingTransfers(const RingGeometry& g, const trace::RingSchedule& s,
                       const std::vector<std::vector<int>>& holdings, float within, RingFrameStats& local) {
  ImDrawList* dl = g.dl;
  const float chunkW = g.chunkW, chunkH = g.chunkH;
  const bool compact = g.compact;
  const auto& node = g.node;
  if (local.stepsDone < local.steps) {
    for (const auto& t : s.steps[static_cast<size_t>(local.stepsDone)]) {
      const ImVec2 a = node[static_cast<size_t>(t.from)], b = node[static_cast<size_t>(t.to)];
      dl->AddLine(a, b, IM_COL32(255, 220, 90, 120), 2.0f);
      const ImVec2 p = lerp(a, b, within);
      const int sent = holdings[static_cast<size_t>(t.from)][static_cast<size_t>(t.chunk)];
      // Past kRingRanksChunkByChunk ranks the neighbours sit close: a small square in flight.
      const float halfW = compact ? px(4.0f) : chunkW / 2, halfH = compact ? px(4.0f) : chunkH / 2;
      const ImVec2 ca(p.x - halfW, p.y - halfH), cb(p.x + halfW, p.y + halfH);
      drawChunk(dl, s, sent, ca, cb);
      dl->AddRect(ImVec2(ca.x - 1, ca.y - 1), ImVec2(cb.x + 1, cb.y + 1), IM_COL32(255, 220, 90, 255), 2.0f, 0, 2.0f);
      if (!compact) {
        char label[8];
        std::snprintf(label, sizeof label, "%d", t.chunk);
        dl->AddText(ImVec2(p.x + chunkW / 2 + 2, p.y - 7), IM_COL32(255, 220, 90, 255), label);
      }
      ++local.transfersDrawn;
    }
  }
}

}  // namespace

void drawRingAnimation(const trace::CollectiveSpan& c, int rank, int worldRanks, int tensorRanks,
                       const std::string& backend, double progress, const std::string& timingNote, float width,
                       float height, RingFrameStats* stats) {
  RingFrameStats local;
  const auto op = static_cast<trace::CollectiveOp>(c.op);
  const trace::RingSchedule s = trace::ringSchedule(op, c.worldSize, trace::collectiveSizeBytes(c));
  ImGui::TextWrapped("%s %s  (step %d, %s)", trace::collectiveOpName(op), trace::collectiveUnit(c).c_str(), c.step,
                     trace::phaseName(static_cast<trace::Phase>(c.phase)));
  if (!s.animatable()) {
    if (op == trace::CollectiveOp::AllToAll) {
      wrappedHint(
          "an all_to_all is not a ring: each rank sends every other rank its part of the input "
          "directly, all of it but its own part: nothing to animate.");
    } else if (trace::isPointToPoint(op)) {
      wrappedHint("a %s moves one message between two ranks, not around a ring: nothing to animate.",
                  trace::collectiveOpName(op));
    } else {
      wrappedHint("a %s among %d rank(s) moves no chunks around a ring: nothing to animate.",
                  trace::collectiveOpName(op), c.worldSize);
    }
    if (stats) *stats = local;
    return;
  }
  local.steps = static_cast<int>(s.steps.size());
  local.bytesSentPerRank = s.bytesSentPerRank();
  const double clamped = std::clamp(progress, 0.0, static_cast<double>(local.steps));
  local.stepsDone = static_cast<int>(std::floor(clamped));
  const float within = static_cast<float>(clamped - local.stepsDone);
  const std::vector<int> members = drawRingText(c, rank, s, worldRanks, tensorRanks, backend, timingNote, local);

  // The ring takes what is left of the area below the text.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const float w = std::min(width, ImGui::GetContentRegionAvail().x);
  const float h = std::max(std::min(height, ImGui::GetContentRegionAvail().y), px(160.0f));
  const ImVec2 center(top.x + w / 2, top.y + h / 2);
  const float radius = std::max(px(50.0f), std::min(w * 0.8f, h) / 2 - px(30.0f));
  const auto holdings = trace::ringHoldingsAfter(s, local.stepsDone);
  const auto finalHoldings = trace::ringHoldingsAfter(s, local.steps);  // what each rank ends with
  RingGeometry g{
      ImGui::GetWindowDrawList(), center, radius, std::vector<ImVec2>(static_cast<size_t>(s.ranks)), false, 0, 0};
  auto& node = g.node;
  for (int r = 0; r < s.ranks; ++r) {
    const float angle = -1.5707963f + 6.2831853f * static_cast<float>(r) / static_cast<float>(s.ranks);
    node[static_cast<size_t>(r)] = ImVec2(center.x + radius * std::cos(angle), center.y + radius * std::sin(angle));
  }
  dl->AddCircle(center, radius, IM_COL32(255, 255, 255, 40), 64, 1.5f);
  const bool compact = s.ranks > kRingRanksChunkByChunk;
  // Chunk by chunk up to kRingRanksChunkByChunk ranks; past that a row of N chunks per rank would
  // overlap its neighbours on the circle, so each rank is one gauge of its chunks together.
  const float chunkW = compact ? px(14.0f) : std::clamp(px(160.0f) / static_cast<float>(s.ranks), px(10.0f), px(36.0f));
  const float chunkH = compact ? px(20.0f) : px(24.0f);
  g.compact = compact;
  g.chunkW = chunkW;
  g.chunkH = chunkH;
  drawRingRanks(g, s, members, holdings, finalHoldings, local);
  drawRingTransfers(g, s, holdings, within, local);
  ImGui::Dummy(ImVec2(w, h));
  if (stats) *stats = local;
}

}  // namespace shardscope::ui
