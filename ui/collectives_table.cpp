#include "ui/collectives_table.h"

#include <imgui.h>

#include <algorithm>
#include <string>

#include "stats/first_mismatch.h"
#include "ui/item_probe.h"

namespace shardscope::ui {

namespace {

const ImVec4 kOdd(1.0f, 0.42f, 0.38f, 1.0f);
const ImVec4 kQuiet(0.62f, 0.64f, 0.68f, 1.0f);

bool isOdd(const std::optional<stats::CollectiveMismatch>& m, const stats::AlignedCollectives& row, int rank) {
  return m && m->group == row.group && m->seq == row.seq && std::count(m->ranks.begin(), m->ranks.end(), rank) > 0;
}

void drawCell(const trace::LoggedCollective* c, bool odd) {
  if (!c) {
    ImGui::TextColored(odd ? kOdd : kQuiet, odd ? "never entered" : "-");
    if (odd) noteItem("collectives:odd-cell");
    return;
  }
  const std::string text = trace::describeCollective(*c);
  if (odd) {
    ImGui::TextColored(kOdd, "%s", text.c_str());
    noteItem("collectives:odd-cell");
  } else {
    ImGui::TextUnformatted(text.c_str());
  }
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%s #%lld of group %s\nin %s, out %s\nstate %s%s%s%s", c->op.c_str(),
                      static_cast<long long>(c->seq), c->group.c_str(), trace::shapesText(c->inputSizes).c_str(),
                      trace::shapesText(c->outputSizes).c_str(), c->state.c_str(),
                      c->finished ? ", ended"
                      : c->failed ? ", failed (its timeout passed or a peer went away): never ended"
                                  : ", not ended",
                      c->where.empty() ? "" : "\ncalled at ", c->where.c_str());
  }
  ImGui::SameLine();
  ImGui::TextColored(kQuiet, "%s", c->finished ? "ended" : c->failed ? "failed" : c->state.c_str());
}

// The rows worth showing: a few before the first mismatch on, else the last of each group.
std::vector<stats::AlignedCollectives> shownRows(const trace::CollectiveLogs& logs,
                                                 const std::optional<stats::CollectiveMismatch>& m) {
  auto rows = stats::alignBySequence(logs);
  std::vector<stats::AlignedCollectives> out;
  for (auto& row : rows) {
    const bool nearMismatch = m && row.group == m->group && row.seq >= m->seq - 3;
    if (nearMismatch || !m) out.push_back(std::move(row));
  }
  if (out.size() > kShownCollectiveRows) out.erase(out.begin(), out.end() - static_cast<long>(kShownCollectiveRows));
  return out;
}

std::string rowLabel(const stats::AlignedCollectives& row) { return row.group + " #" + std::to_string(row.seq); }

void drawTable(const Session& s, const std::optional<stats::CollectiveMismatch>& m) {
  const auto& logs = *s.collectiveLogs;
  const auto rows = shownRows(logs, m);
  float labelWidth = ImGui::CalcTextSize("group #seq").x;
  for (const auto& row : rows) labelWidth = std::max(labelWidth, ImGui::CalcTextSize(rowLabel(row).c_str()).x);
  const int columns = 1 + static_cast<int>(logs.ranks.size());
  const ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchSame;
  if (columns > 64 || !ImGui::BeginTable("last collectives", columns, flags, ImVec2(0, 0))) return;
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("group #seq", ImGuiTableColumnFlags_WidthFixed, labelWidth);
  for (const auto& rank : logs.ranks) ImGui::TableSetupColumn(("rank " + std::to_string(rank.rank)).c_str());
  ImGui::TableHeadersRow();
  for (const auto& row : rows) {
    ImGui::TableNextRow();
    if (m && row.group == m->group && row.seq == m->seq) {
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, ImGui::GetColorU32(ImVec4(0.45f, 0.12f, 0.10f, 0.55f)));
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(rowLabel(row).c_str());
    for (size_t i = 0; i < row.byRank.size(); ++i) {
      ImGui::TableNextColumn();
      drawCell(row.byRank[i], isOdd(m, row, logs.ranks[i].rank));
    }
  }
  ImGui::EndTable();
}

void drawSession(const Session& s) {
  const auto& logs = *s.collectiveLogs;
  const auto m = stats::firstMismatch(logs);
  ImGui::TextDisabled("%s: %zu ranks, %s", s.title.c_str(), logs.ranks.size(), logs.source.c_str());
  if (m) {
    ImGui::TextColored(kOdd, "First mismatch: %s at #%lld of group %s", stats::mismatchKindName(m->kind),
                       static_cast<long long>(m->seq), m->group.c_str());
    noteItem("collectives:first-mismatch");
    ImGui::TextWrapped("%s", m->explanation.c_str());
  } else {
    ImGui::TextWrapped("No mismatch: every collective the ranks hold agrees. %s", stats::whereRanksStand(logs).c_str());
  }
  drawTable(s, m);
}

}  // namespace

void drawLastCollectives(const std::vector<Session>& sessions) {
  bool any = false;
  for (const auto& s : sessions) {
    if (!s.collectiveLogs) continue;
    any = true;
    drawSession(s);
  }
  if (!any) {
    ImGui::TextWrapped(
        "Each rank's last collectives, side by side, from PyTorch's Flight Recorder dumps: open their folder "
        "(shardscope view DIR, where TORCH_FR_DUMP_TEMP_FILE=DIR/fr- or _dump_fr_trace() wrote them).");
  }
}

}  // namespace shardscope::ui
