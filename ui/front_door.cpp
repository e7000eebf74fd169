#include "ui/front_door.h"

#include <vector>

#include <imgui.h>

#include "config/strategies.h"
#include "lessons/lesson.h"
#include "ui/item_probe.h"
#include "ui/lesson_view.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

const ImVec4 kHeading(0.55f, 0.75f, 1.0f, 1.0f);

// Each lesson's name and title, read once (the lessons ship with the app and do not change).
const std::vector<std::pair<std::string, std::string>>& lessonTitles() {
  static const std::vector<std::pair<std::string, std::string>> titles = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& name : lessons::lessonNames()) {
      lessons::Lesson lesson;
      if (!lessons::loadLesson(name, lesson)) out.emplace_back(name, lesson.title);
    }
    return out;
  }();
  return titles;
}

// Why the sidebar's Run or Compare cannot start, under its button.
void whyNot(const std::string& problem) {
  if (problem.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
  ImGui::TextWrapped("%s", problem.c_str());
  ImGui::PopStyleColor();
}

void drawLessonsWay(AppState& state) {
  ImGui::TextColored(kHeading, "Learn: a lesson");
  ImGui::TextWrapped("Real runs with captions that say what to look at, for a class or on a projector.");
  ImGui::Checkbox("predict first (interview practice)", &state.lesson.predictNext);
  for (const auto& [name, title] : lessonTitles()) {
    if (ImGui::Selectable(title.c_str())) state.doorLesson = name;
    noteItem(("door:lesson:" + name).c_str());
  }
}

ConfigAction drawRunWay(const AppState& state, const std::string& problem, const std::string& compareProblem) {
  ImGui::TextColored(kHeading, "Run or compare");
  const config::RunConfig& c = state.config;
  ImGui::TextWrapped("Train a %s of %lld layers with %s on %d ranks, %lld steps (the settings on the left).",
                     config::modeName(c.model), static_cast<long long>(c.layers),
                     config::strategyTitle(c.strategy).c_str(), c.world, static_cast<long long>(c.steps));
  ConfigAction action = ConfigAction::None;
  ImGui::BeginDisabled(!problem.empty());
  if (ImGui::Button("Run", ImVec2(px(120), 0))) action = ConfigAction::Run;
  noteItem("door:run");
  ImGui::EndDisabled();
  whyNot(problem);
  ImGui::TextWrapped("Or the strategies ticked on the left, one after another on the same model and data:");
  ImGui::BeginDisabled(!compareProblem.empty());
  if (ImGui::Button("Compare", ImVec2(px(120), 0))) action = ConfigAction::Compare;
  noteItem("door:compare");
  ImGui::EndDisabled();
  whyNot(compareProblem);
  return action;
}

void drawRecordingWay(AppState& state) {
  ImGui::TextColored(kHeading, "Look at a recording");
  ImGui::TextWrapped(
      "A trace or summary of shardscope's, your job's torch.profiler traces, a CUDA memory snapshot "
      "or a Flight Recorder dump: known by what is in them.");
  if (ImGui::Button("Open a file or folder (Ctrl+O)")) {
    state.open.expand = true;
    state.open.focusPath = true;
  }
  noteItem("door:open");
  ImGui::TextWrapped("Or stream a job that torchrun launches, on this host or across nodes:");
  if (ImGui::Button("Listen for a job")) state.listen.expand = true;
  noteItem("door:listen");
}

}  // namespace

ConfigAction drawFrontDoor(AppState& state, const std::string& problem, const std::string& compareProblem) {
  ImGui::TextDisabled(
      "Every rank is its own process; what you see is measured: the allocator's bytes by role, "
      "every collective, every forward and backward per unit.");
  ImGui::Spacing();
  ConfigAction action = ConfigAction::None;
  if (!ImGui::BeginTable("front door", 3, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_PadOuterX)) return action;
  // The lessons' titles are the longest lines, and do not wrap: their column gets the most room.
  ImGui::TableSetupColumn("lesson", ImGuiTableColumnFlags_WidthStretch, 1.5f);
  ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableSetupColumn("recording", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableNextColumn();
  drawLessonsWay(state);
  ImGui::TableNextColumn();
  action = drawRunWay(state, problem, compareProblem);
  ImGui::TableNextColumn();
  drawRecordingWay(state);
  ImGui::EndTable();
  return action;
}

}  // namespace shardscope::ui
