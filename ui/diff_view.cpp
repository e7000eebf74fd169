#include "ui/diff_view.h"

#include <cmath>

#include <imgui.h>

#include "stats/run_diff_report.h"
#include "trace/format.h"
#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

stats::DiffSide sideOf(const Session& s, const std::vector<stats::RankStats>& ranks) {
  stats::DiffSide side;
  side.name = s.title;
  side.config = s.config;
  side.recording = s.fromSummary ? nullptr : &s.recording;
  side.ranks = ranks;
  return side;
}

ImVec4 verdictColor(stats::Verdict v) {
  if (v == stats::Verdict::Regression) return ImVec4(1.0f, 0.45f, 0.4f, 1);
  if (v == stats::Verdict::Improvement) return ImVec4(0.5f, 0.85f, 0.5f, 1);
  return ImVec4(0.75f, 0.75f, 0.8f, 1);
}

}  // namespace

void refreshDiff(DiffViewState& state, const std::vector<Session>& sessions,
                 const std::vector<std::vector<stats::RankStats>>& stats, uint64_t storeVersion) {
  if (storeVersion == state.version) return;
  // The diff walks every span of both runs: while one records, not every frame.
  const auto now = std::chrono::steady_clock::now();
  if (anyRecording(sessions) && state.version != UINT64_MAX && now - state.lastPass < std::chrono::seconds(2)) return;
  state.lastPass = now;
  state.version = storeVersion;
  state.error.clear();
  if (sessions.size() < 2 || stats.size() < 2) {
    state.error =
        "A diff needs two recordings: open them with 'shardscope view --diff A B' (or Open one beside "
        "the other); the first is A, the baseline.";
    return;
  }
  state.diff = stats::diffRuns(sideOf(sessions[0], stats[0]), sideOf(sessions[1], stats[1]));
  if (state.diff.stepsCompared < 1) state.error = "No step after the warm-up is in both recordings.";
}

void drawDiffTab(DiffViewState& state, const std::vector<Session>& sessions) {
  if (!state.error.empty()) {
    ImGui::TextWrapped("%s", state.error.c_str());
    return;
  }
  const stats::RunDiff& d = state.diff;
  ImGui::Text("A: %s    B: %s    steps %d to %d of both", sessions[0].title.c_str(), sessions[1].title.c_str(),
              d.warmup, d.warmup + d.stepsCompared - 1);
  ImGui::TextColored(verdictColor(d.verdict), "%s:", stats::verdictName(d.verdict));
  ImGui::SameLine();
  ImGui::TextWrapped("%s", d.reason.c_str());
  noteItem("diff:verdict");
  const ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("diff", 6, flags, ImVec2(0, ImGui::GetContentRegionAvail().y - px(40)))) return;
  for (const char* h :
       {"largest changes (click: the playhead there, in B)", "A", "B", "change", "share", "of a collective's time"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  int shown = 0;
  for (const auto& c : d.changes) {
    if (c.a == c.b || shown == 40) continue;
    ImGui::PushID(shown++);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    const std::string label = c.figure + (c.where.empty() ? "" : ", " + c.where);
    const bool worse = (c.b > c.a) == (c.unit != stats::DiffUnit::Percent);  // less overlap is worse
    ImGui::PushStyleColor(ImGuiCol_Text, worse ? ImVec4(1.0f, 0.7f, 0.55f, 1) : ImVec4(0.65f, 0.9f, 0.65f, 1));
    const bool selected = !c.at.empty() && c.at == state.selectedAt;
    if (ImGui::Selectable(label.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns) && !c.at.empty()) {
      state.pendingAt = state.selectedAt = c.at;
    }
    ImGui::PopStyleColor();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stats::diffValueText(c.unit, c.a).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stats::diffValueText(c.unit, c.b).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stats::diffChangeText(c).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%+.1f%%", 100 * c.share);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stats::diffExposureText(c).c_str());
    ImGui::PopID();
  }
  ImGui::EndTable();
  noteItem("diff:table");
  for (const auto& note : d.notes) wrappedHint("%s", note.c_str());
}

}  // namespace shardscope::ui
