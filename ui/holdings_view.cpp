#include "ui/holdings_view.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <imgui.h>

#include "config/pipeline_config.h"
#include "trace/format.h"
#include "ui/pipeline_lanes.h"
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
const trace::ComputeSpan* computingAt(const trace::RankTimeline& t, double tAbs) {
  const trace::ComputeSpan* inside = nullptr;
  for (size_t i = trace::firstSpanFrom(t.compute, tAbs - static_cast<double>(t.longestCompute));
       i < t.compute.size() && t.compute[i].beginNs <= tAbs; ++i) {
    const trace::ComputeSpan& c = t.compute[i];
    if (static_cast<trace::ComputeKind>(c.op) != trace::ComputeKind::Step && !trace::isOffloadSpan(c) &&
        c.endNs >= tAbs) {
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

// Where the grid's cells lie: a label column, then one column per unit (and the "no one unit" one).
struct CellGrid {
  ImVec2 origin;
  float labelWidth = 0, headerHeight = 0, cellWidth = 0, rowHeight = 0;
  float columnX(int c) const { return origin.x + labelWidth + cellWidth * static_cast<float>(c); }
  float rowY(int row) const { return origin.y + headerHeight + rowHeight * static_cast<float>(row); }
  ImVec2 topLeft(int c, int row) const { return ImVec2(columnX(c) + 3, rowY(row) + 2); }
  ImVec2 bottomRight(int c, int row) const { return ImVec2(columnX(c) + cellWidth - 3, rowY(row) + rowHeight - 2); }
  void label(ImDrawList* dl, int row, const char* text, ImU32 color) const {
    dl->AddText(ImVec2(origin.x + 4, rowY(row) + (rowHeight - ImGui::GetFontSize()) / 2), color, text);
  }
};

// One cell from a to b: its background, the roles stacked to `scale`, its total above them (when
// it holds anything) and, hovered, the bytes of each role. Returns the total shown.
int64_t drawCell(ImDrawList* dl, ImVec2 a, ImVec2 b, const RoleBytes& held, double scale, ImU32 textColor, int rank,
                 const std::string& what) {
  const int64_t total = shownBytes(held);
  dl->AddRectFilled(a, b, IM_COL32(26, 28, 33, 255), 3.0f);
  drawStack(dl, held, scale, ImVec2(a.x + 6, a.y + ImGui::GetFontSize() + 1), ImVec2(b.x - 6, b.y));
  if (total > 0) dl->AddText(ImVec2(a.x + 4, a.y), textColor, trace::formatBytes(static_cast<double>(total)).c_str());
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y && ImGui::IsWindowHovered()) {
    cellTooltip(rank, what, held);
  }
  return total;
}

// --offload cpu: rank r's host memory per unit, a row of framed cells under its device row (the
// shards, their gradients and the optimizer's state, moved off the device), to the host's scale.
void drawHostRow(ImDrawList* dl, const trace::RunRecording& rec, int r, const std::vector<int32_t>& units, int64_t tAbs,
                 double scale, const CellGrid& grid, int row, HoldingsFrameStats& stats) {
  grid.label(dl, row, "  host", IM_COL32(170, 170, 180, 255));
  for (size_t c = 0; c < units.size(); ++c) {
    const ImVec2 a = grid.topLeft(static_cast<int>(c), row), b = grid.bottomRight(static_cast<int>(c), row);
    const RoleBytes held = rec.unitMemoryAt(r, units[c], tAbs, trace::MemorySpace::Host);
    stats.hostBytesShown +=
        drawCell(dl, a, b, held, scale, IM_COL32(190, 190, 200, 255), r, trace::unitName(units[c]) + " in host memory");
    dl->AddRect(a, b, IM_COL32(120, 120, 135, 90), 3.0f);  // framed: not the device's memory
    ++stats.hostCells;
  }
}

// The yellow frame and F/B/R tag of the cell whose unit the rank is computing at the moment.
void markComputing(ImDrawList* dl, ImVec2 a, ImVec2 b, const trace::ComputeSpan& computing) {
  dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(255, 220, 90, 255), 3.0f, 0, 2.0f);
  const char* tag = static_cast<trace::ComputeKind>(computing.op) == trace::ComputeKind::Backward ? "B"
                    : trace::isRecomputation(computing)                                           ? "R"
                                                                                                  : "F";
  dl->AddText(ImVec2(b.x - ImGui::CalcTextSize(tag).x - 2, a.y), IM_COL32(255, 220, 90, 255), tag);
}

// Rank r's device memory per unit, a row of cells to the shared `scale`, each with the unit's own
// most outlined faintly and the unit it is computing marked.
void drawDeviceRow(ImDrawList* dl, const trace::RunRecording& rec, int r, const std::vector<int32_t>& units,
                   int64_t tAbs, double scale, const CellGrid& grid, int row, HoldingsFrameStats& stats) {
  const trace::ComputeSpan* computing = computingAt(rec.rank(r), static_cast<double>(tAbs));
  const int32_t computingUnit = computing ? trace::unitFromName(computing->text()) : trace::kNoUnit;
  for (size_t c = 0; c < units.size(); ++c) {
    const ImVec2 a = grid.topLeft(static_cast<int>(c), row), b = grid.bottomRight(static_cast<int>(c), row);
    // The unit's own most, faintly: what "full" looks like for this cell.
    const auto& tracks = rec.rank(r).units;
    const size_t slot = static_cast<size_t>(units[c] + 1);
    const int64_t total = drawCell(dl, a, b, rec.unitMemoryAt(r, units[c], tAbs), scale, IM_COL32(210, 210, 220, 255),
                                   r, trace::unitName(units[c]));
    if (slot < tracks.size() && scale > 0) {
      const float top = b.y - static_cast<float>(shownBytes(tracks[slot].peakByRole) / scale) * (b.y - a.y - 14);
      dl->AddRect(ImVec2(a.x + 6, top), ImVec2(b.x - 6, b.y), IM_COL32(255, 255, 255, 30));
    }
    if (total > 0) ++stats.filledCells;
    if (units[c] == computingUnit) {
      ++stats.computingCells;
      markComputing(dl, a, b, *computing);
    }
    ++stats.cells;
    stats.bytesShown += total;
  }
}

// What no unit owns (buckets, flat buffers): per rank, its total in the roles a cell shows less
// what its units hold; and the most of it any rank holds, the scale of its column.
struct UnownedMemory {
  std::vector<RoleBytes> perRank;
  double scale = 0;
};

UnownedMemory unownedMemory(const trace::RunRecording& rec, const std::vector<int32_t>& units, double tNs,
                            int64_t tAbs) {
  UnownedMemory unowned;
  unowned.perRank.resize(static_cast<size_t>(rec.ranks()));
  for (int r = 0; r < rec.ranks(); ++r) {
    RoleBytes rest = memoryAt(rec, r, tNs);
    for (int32_t u : units) {
      const RoleBytes held = rec.unitMemoryAt(r, u, tAbs);
      for (int role = 0; role < trace::kMemoryRoleCount; ++role)
        rest[role] = std::max<int64_t>(0, rest[role] - held[role]);
    }
    unowned.perRank[static_cast<size_t>(r)] = rest;
    unowned.scale = std::max(unowned.scale, static_cast<double>(shownBytes(rest)));
  }
  return unowned;
}

// The grid at the cursor, `columns` wide and `rows` high, sharing `width` x `height` among them.
CellGrid holdingsGrid(float width, float height, int columns, int rows, float labelWidth) {
  CellGrid grid;
  grid.origin = ImGui::GetCursorScreenPos();
  grid.labelWidth = labelWidth;
  grid.headerHeight = ImGui::GetFontSize() + px(7.0f);
  grid.cellWidth = std::max(px(24.0f), (width - grid.labelWidth) / static_cast<float>(columns));
  grid.rowHeight = std::clamp((height - grid.headerHeight) / static_cast<float>(rows), px(22.0f), px(140.0f));
  return grid;
}

// The units' names above their columns, shortened to fit, and the "no one unit" column's.
void drawColumnHeaders(ImDrawList* dl, const CellGrid& grid, const std::vector<int32_t>& units, bool showUnowned) {
  const float labelRoom = grid.cellWidth - 8;
  for (size_t c = 0; c < units.size(); ++c) {
    dl->AddText(ImVec2(grid.columnX(static_cast<int>(c)) + 4, grid.origin.y + 2), IM_COL32(200, 200, 210, 255),
                fittedUnitLabel(trace::unitName(units[c]), labelRoom).c_str());
  }
  if (showUnowned) {
    const char* label =
        ImGui::CalcTextSize("no one unit (own scale)").x <= labelRoom ? "no one unit (own scale)" : "none";
    dl->AddText(ImVec2(grid.columnX(static_cast<int>(units.size())) + 4, grid.origin.y + 2),
                IM_COL32(160, 160, 170, 255), label);
  }
}

// Why there is no grid: a PyTorch job's records have no units, or nothing was recorded yet.
void drawNoUnitsNotice(const Session& session) {
  if (!session.jobLabel.empty()) {
    // torch.profiler's events and the allocator's snapshots carry no model unit per allocation.
    ImGui::TextDisabled(
        "A PyTorch job's own records do not say which model unit each allocation belongs to:\n"
        "its memory by role is in the lanes above.");
  } else {
    ImGui::TextDisabled(
        "Nothing recorded per model unit yet: run (or open a trace written by this version) to see\n"
        "what each rank holds of each unit.");
  }
}

}  // namespace

// "rank 3"; under --tp N both of its places in its stage's grid, "rank 3 d1 t1" (data rank, tensor
// rank 3 % N); under --pp the pipeline stages it holds too, "rank 3 s1,3".
std::string rankRowLabel(int rank, const config::RunConfig& c) {
  std::string label = "rank " + std::to_string(rank);
  const int tensorRanks = std::max(1, c.tp), pipeRanks = std::max(1, c.pp);
  const auto place = config::pipelinePlace(rank, std::max(c.world, rank + 1), pipeRanks);
  if (tensorRanks > 1) {
    label += " d" + std::to_string(place.stageRank / tensorRanks) + " t" + std::to_string(rank % tensorRanks);
  }
  if (pipeRanks > 1) {
    std::string stages;
    for (int s : config::stagesOfRank(config::pipelineShapeOf(c), place.pipeRank)) {
      stages += (stages.empty() ? "" : ",") + std::to_string(s);
    }
    label += " s" + stages;
  }
  return label;
}

bool recordsHostMemoryPerUnit(const trace::RunRecording& rec) { return unitScale(rec, trace::MemorySpace::Host) > 0; }

std::string fittedUnitLabel(const std::string& name, float width) {
  if (ImGui::CalcTextSize(name.c_str()).x <= width) return name;
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string index = name.substr(dot + 1);
  for (const std::string& shorter : {name.substr(0, 1) + index, index}) {
    if (ImGui::CalcTextSize(shorter.c_str()).x <= width) return shorter;
  }
  return "";
}

bool holdingsRole(MemoryRole role) {
  switch (role) {
    case MemoryRole::ParamShard:
    case MemoryRole::ParamGathered:
    case MemoryRole::GradShard:
    case MemoryRole::GradFull:
    case MemoryRole::OptimizerState:
      return true;
    default:
      return false;
  }
}

void drawHoldings(const Session& session, double tNs, float width, float height, HoldingsFrameStats* stats,
                  const PipelineLanes* lanes) {
  HoldingsFrameStats local;
  const auto& rec = session.recording;
  const std::vector<int32_t> units = rec.recordedUnits();
  if (rec.ranks() == 0 || units.empty() || rec.originNs() == INT64_MAX) {
    drawNoUnitsNotice(session);
    if (stats) *stats = local;
    return;
  }
  const int64_t tAbs = rec.originNs() + static_cast<int64_t>(tNs);
  // One scale for every unit cell: the most any rank ever held of any unit; the host's its own.
  const double scale = unitScale(rec, trace::MemorySpace::Device);
  const double hostScale = unitScale(rec, trace::MemorySpace::Host);
  const int rowsPerRank = hostScale > 0 ? 2 : 1;
  const UnownedMemory unowned = unownedMemory(rec, units, tNs, tAbs);
  const bool showUnowned = unowned.scale > 0;

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const bool showHeld = lanes && static_cast<int>(lanes->actions.size()) == rec.ranks();
  const int microBatches = config::pipelineShapeOf(session.config).microBatches;
  const int columns = static_cast<int>(units.size()) + (showUnowned ? 1 : 0) + (showHeld ? 1 : 0);
  // Each row named by the rank's places (rankRowLabel), the label column as wide as the widest.
  std::vector<std::string> labels;
  float labelWidth = px(60.0f);
  for (int r = 0; r < rec.ranks(); ++r) {
    labels.push_back(rankRowLabel(r, session.config));
    labelWidth = std::max(labelWidth, ImGui::CalcTextSize(labels.back().c_str()).x + px(12.0f));
  }
  const CellGrid grid = holdingsGrid(width, height, columns, rec.ranks() * rowsPerRank, labelWidth);
  drawColumnHeaders(dl, grid, units, showUnowned);
  if (showHeld) {
    dl->AddText(ImVec2(grid.columnX(columns - 1) + 4, grid.origin.y + 2), IM_COL32(200, 200, 210, 255),
                "micro-batches held");
  }
  for (int r = 0; r < rec.ranks(); ++r) {
    const int row = r * rowsPerRank;
    grid.label(dl, row, labels[static_cast<size_t>(r)].c_str(), IM_COL32(230, 230, 235, 255));
    if (rowsPerRank == 2) drawHostRow(dl, rec, r, units, tAbs, hostScale, grid, row + 1, local);
    drawDeviceRow(dl, rec, r, units, tAbs, scale, grid, row, local);
    if (showHeld) {
      const auto held = stats::activationBytesHeldAt(rec.rank(r), lanes->actions[static_cast<size_t>(r)], tAbs);
      drawHeldMicroBatches(dl, grid.topLeft(columns - 1, row), grid.bottomRight(columns - 1, row), held, microBatches,
                           r);
      ++local.heldCells;
    }
    if (showUnowned) {
      const int unownedColumn = columns - 1 - (showHeld ? 1 : 0);
      drawCell(dl, grid.topLeft(unownedColumn, row), grid.bottomRight(unownedColumn, row),
               unowned.perRank[static_cast<size_t>(r)], unowned.scale, IM_COL32(170, 170, 180, 255), r,
               "no one unit (buckets, flat buffers)");
    }
  }
  ImGui::Dummy(ImVec2(width, grid.headerHeight + grid.rowHeight * static_cast<float>(rec.ranks() * rowsPerRank)));
  if (stats) *stats = local;
}

}  // namespace shardscope::ui
