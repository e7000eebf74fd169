#include "ui/holdings_view.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <imgui.h>

#include "trace/format.h"
#include "ui/theme.h"
#include "ui/timeline_view.h"

namespace shardscope::ui {

namespace {

using trace::MemoryRole;
using trace::RoleBytes;

int64_t shownBytes(const RoleBytes& bytes) {
  int64_t total = 0;
  for (int role = 0; role < trace::kTensorRoleCount; ++role) {
    if (holdingsRole(static_cast<MemoryRole>(role))) total += bytes[role];
  }
  return total;
}

// The compute span a rank is inside at absolute time t (step spans and --offload cpu's copies
// aside: they run beside compute, on the communication stream), or nullptr.
const trace::Event* computingAt(const trace::RankTimeline& t, double tAbs) {
  const trace::Event* inside = nullptr;
  for (size_t i = trace::firstSpanFrom(t.compute, tAbs - static_cast<double>(t.longestCompute));
       i < t.compute.size() && t.compute[i].beginNs <= tAbs; ++i) {
    const trace::Event& c = t.compute[i];
    if (static_cast<trace::ComputeKind>(c.op) != trace::ComputeKind::Step && !trace::isHostCopy(c) && c.endNs >= tAbs) {
      inside = &c;
    }
  }
  return inside;
}

// A vertical stack of roles from the bottom of the rectangle, `scale` bytes to its full height.
void drawStack(ImDrawList* dl, const RoleBytes& bytes, double scale, ImVec2 a, ImVec2 b) {
  float y = b.y;
  const float height = b.y - a.y;
  for (int role = 0; role < trace::kTensorRoleCount; ++role) {
    if (!holdingsRole(static_cast<MemoryRole>(role)) || bytes[role] <= 0 || scale <= 0) continue;
    const float h = std::max(1.0f, static_cast<float>(bytes[role] / scale) * height);
    dl->AddRectFilled(ImVec2(a.x, std::max(a.y, y - h)), ImVec2(b.x, y), roleColor(static_cast<MemoryRole>(role)));
    y -= h;
  }
}

void cellTooltip(int rank, const std::string& unit, const RoleBytes& bytes) {
  ImGui::BeginTooltip();
  ImGui::Text("rank %d holds of %s:", rank, unit.c_str());
  for (int role = 0; role < trace::kTensorRoleCount; ++role) {
    if (!holdingsRole(static_cast<MemoryRole>(role)) || bytes[role] <= 0) continue;
    ImGui::Text("  %-16s %s (%lld B)", trace::memoryRoleName(static_cast<MemoryRole>(role)),
                trace::formatBytes(static_cast<double>(bytes[role])).c_str(), static_cast<long long>(bytes[role]));
  }
  ImGui::EndTooltip();
}

// The most any rank held of any unit in `space`, in the roles a cell shows.
double unitScale(const trace::RunRecording& rec, trace::MemorySpace space) {
  double scale = 0;
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& tracks = space == trace::MemorySpace::Host ? rec.rank(r).host.units : rec.rank(r).units;
    for (const auto& track : tracks) scale = std::max(scale, static_cast<double>(shownBytes(track.peakByRole)));
  }
  return scale;
}

// --offload cpu: rank r's host memory per unit, a row of cells under its device row (the shards,
// their gradients and the optimizer's state, moved off the device), to the host's own scale.
void drawHostRow(ImDrawList* dl, const trace::RunRecording& rec, int r, const std::vector<int32_t>& units,
                 int64_t tAbs, double scale, const std::vector<float>& columnX, float cellWidth, float y0,
                 float rowHeight, HoldingsFrameStats& stats) {
  dl->AddText(ImVec2(columnX.front() - px(56.0f), y0 + (rowHeight - ImGui::GetFontSize()) / 2),
              IM_COL32(170, 170, 180, 255), "  host");
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (size_t c = 0; c < units.size(); ++c) {
    const ImVec2 a(columnX[c] + 3, y0 + 2), b(columnX[c] + cellWidth - 3, y0 + rowHeight - 2);
    const RoleBytes held = rec.unitMemoryAt(r, units[c], tAbs, trace::MemorySpace::Host);
    const int64_t total = shownBytes(held);
    dl->AddRectFilled(a, b, IM_COL32(22, 24, 30, 255), 3.0f);
    dl->AddRect(a, b, IM_COL32(120, 120, 135, 90), 3.0f);  // framed: not the device's memory
    drawStack(dl, held, scale, ImVec2(a.x + 6, a.y + ImGui::GetFontSize() + 1), ImVec2(b.x - 6, b.y));
    if (total > 0) {
      dl->AddText(ImVec2(a.x + 4, a.y), IM_COL32(190, 190, 200, 255), trace::formatBytes(static_cast<double>(total)).c_str());
    }
    ++stats.hostCells;
    stats.hostBytesShown += total;
    if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
      cellTooltip(r, trace::unitName(units[c]) + " in host memory", held);
    }
  }
}

}  // namespace

bool holdingsRole(MemoryRole role) {
  switch (role) {
    case MemoryRole::ParamShard:
    case MemoryRole::ParamGathered:
    case MemoryRole::GradShard:
    case MemoryRole::GradFull:
    case MemoryRole::OptimizerState: return true;
    default: return false;
  }
}

void drawHoldings(const Session& session, double tNs, float width, float height, HoldingsFrameStats* stats) {
  HoldingsFrameStats local;
  const auto& rec = session.recording;
  const std::vector<int32_t> units = rec.recordedUnits();
  if (rec.ranks() == 0 || units.empty() || rec.originNs() == INT64_MAX) {
    if (!session.jobLabel.empty()) {
      // torch.profiler's events and the allocator's snapshots carry no model unit per allocation.
      ImGui::TextDisabled("A PyTorch job's own records do not say which model unit each allocation belongs to:\n"
                          "its memory by role is in the lanes above.");
    } else {
      ImGui::TextDisabled("Nothing recorded per model unit yet: run (or open a trace written by this version) to see\n"
                          "what each rank holds of each unit.");
    }
    if (stats) *stats = local;
    return;
  }
  const int64_t tAbs = rec.originNs() + static_cast<int64_t>(tNs);
  // One scale for every unit cell: the most any rank ever held of any unit; the host's its own.
  const double scale = unitScale(rec, trace::MemorySpace::Device);
  const double hostScale = unitScale(rec, trace::MemorySpace::Host);
  const int rowsPerRank = hostScale > 0 ? 2 : 1;
  // What no unit owns: the rank's total in the same roles, less the units'.
  std::vector<RoleBytes> unowned(static_cast<size_t>(rec.ranks()));
  double unownedScale = 0;
  for (int r = 0; r < rec.ranks(); ++r) {
    RoleBytes rest = memoryAt(rec, r, tNs);
    for (int32_t u : units) {
      const RoleBytes held = rec.unitMemoryAt(r, u, tAbs);
      for (int role = 0; role < trace::kMemoryRoleCount; ++role) rest[role] = std::max<int64_t>(0, rest[role] - held[role]);
    }
    unowned[static_cast<size_t>(r)] = rest;
    unownedScale = std::max(unownedScale, static_cast<double>(shownBytes(rest)));
  }
  const bool showUnowned = unownedScale > 0;

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float labelWidth = px(60.0f), headerHeight = ImGui::GetFontSize() + px(7.0f);
  const int columns = static_cast<int>(units.size()) + (showUnowned ? 1 : 0);
  const float cellWidth = std::max(px(24.0f), (width - labelWidth) / static_cast<float>(columns));
  const float rowHeight = std::clamp((height - headerHeight) / static_cast<float>(rec.ranks() * rowsPerRank), px(22.0f), px(140.0f));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  auto columnX = [&](int c) { return origin.x + labelWidth + cellWidth * static_cast<float>(c); };

  for (size_t c = 0; c < units.size(); ++c) {
    dl->AddText(ImVec2(columnX(static_cast<int>(c)) + 4, origin.y + 2), IM_COL32(200, 200, 210, 255), trace::unitName(units[c]).c_str());
  }
  if (showUnowned) {
    dl->AddText(ImVec2(columnX(columns - 1) + 4, origin.y + 2), IM_COL32(160, 160, 170, 255), "no one unit (own scale)");
  }
  std::vector<float> unitColumnX;
  for (size_t c = 0; c < units.size(); ++c) unitColumnX.push_back(columnX(static_cast<int>(c)));
  for (int r = 0; r < rec.ranks(); ++r) {
    const float y0 = origin.y + headerHeight + rowHeight * static_cast<float>(r * rowsPerRank);
    if (rowsPerRank == 2) {
      drawHostRow(dl, rec, r, units, tAbs, hostScale, unitColumnX, cellWidth, y0 + rowHeight, rowHeight, local);
    }
    char label[16];
    std::snprintf(label, sizeof label, "rank %d", r);
    dl->AddText(ImVec2(origin.x + 4, y0 + (rowHeight - ImGui::GetFontSize()) / 2), IM_COL32(230, 230, 235, 255), label);
    const trace::Event* computing = computingAt(rec.rank(r), static_cast<double>(tAbs));
    const int32_t computingUnit = computing ? trace::unitFromName(computing->text) : trace::kNoUnit;
    for (size_t c = 0; c < units.size(); ++c) {
      const ImVec2 a(columnX(static_cast<int>(c)) + 3, y0 + 2), b(columnX(static_cast<int>(c)) + cellWidth - 3, y0 + rowHeight - 2);
      const RoleBytes held = rec.unitMemoryAt(r, units[c], tAbs);
      const int64_t total = shownBytes(held);
      dl->AddRectFilled(a, b, IM_COL32(26, 28, 33, 255), 3.0f);
      // The unit's own most, faintly: what "full" looks like for this cell.
      const auto& tracks = rec.rank(r).units;
      const size_t slot = static_cast<size_t>(units[c] + 1);
      if (slot < tracks.size() && scale > 0) {
        const float top = b.y - static_cast<float>(shownBytes(tracks[slot].peakByRole) / scale) * (b.y - a.y - 14);
        dl->AddRect(ImVec2(a.x + 6, top), ImVec2(b.x - 6, b.y), IM_COL32(255, 255, 255, 30));
      }
      drawStack(dl, held, scale, ImVec2(a.x + 6, a.y + ImGui::GetFontSize() + 1), ImVec2(b.x - 6, b.y));
      if (total > 0) {
        ++local.filledCells;
        dl->AddText(ImVec2(a.x + 4, a.y), IM_COL32(210, 210, 220, 255), trace::formatBytes(static_cast<double>(total)).c_str());
      }
      if (units[c] == computingUnit) {
        ++local.computingCells;
        dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(255, 220, 90, 255), 3.0f, 0, 2.0f);
        const char* tag = static_cast<trace::ComputeKind>(computing->op) == trace::ComputeKind::Backward ? "B"
                          : trace::isRecomputation(*computing)                                       ? "R"
                                                                                                      : "F";
        dl->AddText(ImVec2(b.x - ImGui::CalcTextSize(tag).x - 2, a.y), IM_COL32(255, 220, 90, 255), tag);
      }
      ++local.cells;
      local.bytesShown += total;
      if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
        cellTooltip(r, trace::unitName(units[c]), held);
      }
    }
    if (showUnowned) {
      const ImVec2 a(columnX(columns - 1) + 3, y0 + 2), b(columnX(columns - 1) + cellWidth - 3, y0 + rowHeight - 2);
      const RoleBytes& rest = unowned[static_cast<size_t>(r)];
      dl->AddRectFilled(a, b, IM_COL32(26, 28, 33, 255), 3.0f);
      drawStack(dl, rest, unownedScale, ImVec2(a.x + 6, a.y + ImGui::GetFontSize() + 1), ImVec2(b.x - 6, b.y));
      dl->AddText(ImVec2(a.x + 4, a.y), IM_COL32(170, 170, 180, 255), trace::formatBytes(static_cast<double>(shownBytes(rest))).c_str());
      if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
        cellTooltip(r, "no one unit (buckets, flat buffers)", rest);
      }
    }
  }
  ImGui::Dummy(ImVec2(width, headerHeight + rowHeight * static_cast<float>(rec.ranks() * rowsPerRank)));
  if (stats) *stats = local;
}

}  // namespace shardscope::ui
