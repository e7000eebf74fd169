#include "ui/lesson_view.h"

#include <algorithm>
#include <cstdio>

#include <imgui.h>

#include "ui/app_state.h"
#include "ui/item_probe.h"
#include "ui/key_codes.h"
#include "ui/panels.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

std::vector<std::string> runTitles(const lessons::Lesson& lesson) {
  std::vector<std::string> titles;
  for (const auto& run : lesson.runs) titles.push_back(run.label + ": " + config::strategyTitle(run.config.strategy));
  return titles;
}

// The sessions on screen are this lesson's runs, in its order (the user may have run something else since).
bool sessionsAreTheLessons(const lessons::Lesson& lesson, const std::vector<Session>& sessions) {
  const auto titles = runTitles(lesson);
  if (sessions.size() != titles.size()) return false;
  for (size_t i = 0; i < titles.size(); ++i) {
    if (sessions[i].title != titles[i]) return false;
  }
  return true;
}

int runIndex(const lessons::Lesson& lesson, const std::string& label) {
  for (size_t i = 0; i < lesson.runs.size(); ++i) {
    if (lesson.runs[i].label == label) return static_cast<int>(i);
  }
  return 0;
}

// The caption's tab to the front, its run's timeline followed, the playhead where it points.
void applyCaption(AppState& state) {
  LessonState& l = state.lesson;
  const auto& c = l.lesson.captions[static_cast<size_t>(l.caption)];
  if (!c.tab.empty()) {
    if (const char* title = bottomTabTitle(c.tab)) state.openTab = title;
  }
  state.playhead.session = runIndex(l.lesson, c.run);
  state.scrollToSession = state.playhead.session;                             // its run in view, not below the fold
  if (!c.whatIf.empty()) (void)applyWhatIfExample(state.estimate, c.whatIf);  // checked when the lesson loaded
  state.atError.clear();
  state.pendingAt = c.at;
  l.appliedCaption = l.caption;
}

void drawChecks(const LessonState& l) {
  for (const auto& check : l.checks) {
    const ImVec4 color = check.holds ? ImVec4(0.5f, 0.85f, 0.5f, 1.0f) : ImVec4(1.0f, 0.45f, 0.4f, 1.0f);
    ImGui::TextColored(color, "%s", check.holds ? "holds on this run:" : "does NOT hold on this run:");
    ImGui::SameLine();
    ImGui::TextWrapped("%s (%s)", check.says.c_str(), check.measured.c_str());
  }
}

// Predict first, before the runs: each question with its answer field; the runs start on "Lock in".
void drawQuestions(AppState& state, EngineControl* engine) {
  LessonState& l = state.lesson;
  ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "PREDICT FIRST");
  ImGui::SameLine();
  ImGui::TextWrapped("answer before the runs start: each answer is scored against what they measure");
  bool allRead = true;
  for (size_t i = 0; i < l.lesson.questions.size(); ++i) {
    const auto& q = l.lesson.questions[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::TextWrapped("%zu. %s", i + 1, q.ask.c_str());
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, "%s", l.typed[i].c_str());
    ImGui::SetNextItemWidth(px(320));
    if (ImGui::InputText("##answer", buffer, sizeof buffer)) l.typed[i] = buffer;
    noteItem(("lesson:answer" + std::to_string(i + 1)).c_str());
    ImGui::SameLine();
    std::string error;
    if (l.typed[i].empty()) {
      ImGui::TextDisabled("%s", lessons::answerHint(q).c_str());
      allRead = false;
    } else if (!lessons::readAnswer(q, l.typed[i], error)) {
      ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", error.c_str());
      allRead = false;
    }
    ImGui::PopID();
  }
  ImGui::BeginDisabled(!allRead || !engine || engine->busy());
  // Started next frame, before the window takes the store's lock (starting runs takes it too).
  if (ImGui::Button("Lock in and run")) l.lockRequested = true;
  noteItem("lesson:lock-in");
  ImGui::EndDisabled();
}

// After the runs: each answer against the measurement, and the mean.
void drawScores(const LessonState& l) {
  double total = 0;
  int scored = 0;
  for (size_t i = 0; i < l.lesson.questions.size() && i < l.scores.size(); ++i) {
    if (!l.scores[i]) {
      ImGui::TextDisabled("%zu. not scored: a run it needs did not end", i + 1);
      continue;
    }
    const auto& s = *l.scores[i];
    ImGui::TextWrapped("%zu. you said %s; measured %s; %s: %.0f / 100", i + 1, l.typed[i].c_str(), s.measured.c_str(),
                       s.verdict.c_str(), s.points);
    total += s.points;
    ++scored;
  }
  if (scored > 0) ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "your score: %.0f / 100", total / scored);
}

}  // namespace

static void startRuns(AppState& state, EngineControl* engine) {
  const LessonState& l = state.lesson;
  if (!engine) return;
  std::vector<config::RunConfig> runs;
  for (const auto& run : l.lesson.runs) runs.push_back(run.config);
  engine->startTitled(runs, runTitles(l.lesson));
  state.axis.userMoved = false;
  state.selection.active = false;
  state.expandedRankGroups.clear();
}

void startLesson(AppState& state, EngineControl* engine, lessons::Lesson lesson, bool predictFirst) {
  LessonState& l = state.lesson;
  const bool predictNext = l.predictNext;
  l = LessonState{};
  l.predictNext = predictNext;
  l.active = true;
  l.lesson = std::move(lesson);
  l.predictFirst = predictFirst && !l.lesson.questions.empty();
  l.typed.assign(l.lesson.questions.size(), "");
  if (!l.lesson.runs.empty()) state.config = l.lesson.runs.front().config;
  if (!l.predictFirst) startRuns(state, engine);
}

bool lockInAnswers(AppState& state, EngineControl* engine) {
  LessonState& l = state.lesson;
  std::vector<lessons::Answer> answers;
  for (size_t i = 0; i < l.lesson.questions.size(); ++i) {
    std::string error;
    auto answer = lessons::readAnswer(l.lesson.questions[i], l.typed[i], error);
    if (!answer) return false;
    answers.push_back(*answer);
  }
  l.answers = std::move(answers);
  l.locked = true;
  startRuns(state, engine);
  return true;
}

void drawLessonBar(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, bool runsDone) {
  LessonState& l = state.lesson;
  if (!l.active || l.lesson.captions.empty()) return;
  if (l.predictFirst && !l.locked) {
    ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "LESSON");
    ImGui::SameLine();
    ImGui::TextUnformatted(l.lesson.title.c_str());
    drawQuestions(state, engine);
    ImGui::Separator();
    return;
  }
  const int count = static_cast<int>(l.lesson.captions.size());
  if (!ImGui::GetIO().WantTextInput) {
    if (ImGui::IsKeyPressed(keys::kN, false)) l.caption = std::min(l.caption + 1, count - 1);
    if (ImGui::IsKeyPressed(keys::kP, false)) l.caption = std::max(l.caption - 1, 0);
  }
  const bool ours = sessionsAreTheLessons(l.lesson, sessions);
  ImGui::TextColored(ImVec4(1.0f, 0.86f, 0.35f, 1.0f), "LESSON %d/%d", l.caption + 1, count);
  ImGui::SameLine();
  ImGui::TextUnformatted(l.lesson.title.c_str());
  ImGui::SameLine();
  ImGui::BeginDisabled(l.caption == 0);
  if (ImGui::Button("< Prev")) --l.caption;
  noteItem("lesson:prev");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(l.caption + 1 >= count);
  if (ImGui::Button("Next >")) ++l.caption;
  noteItem("lesson:next");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Close lesson")) {
    l.active = false;
    return;
  }
  noteItem("lesson:close");
  if (l.caption != l.appliedCaption && ours) applyCaption(state);
  ImGui::TextWrapped("%s", l.lesson.captions[static_cast<size_t>(l.caption)].text.c_str());
  noteItem("lesson:caption");
  if (!state.atError.empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", state.atError.c_str());
  if (!ours) {
    ImGui::TextDisabled("the sessions on screen are not this lesson's runs: pick the lesson again to run it");
  } else if (!runsDone) {
    ImGui::TextDisabled("the lesson's claims are checked on its runs when they have ended");
  } else {
    // Once: finished runs do not change (another run replaces them, and then they are not ours).
    if (!l.checked) {
      const auto stats = sessionStats(sessions);
      std::vector<std::shared_ptr<const trace::CollectiveLogs>> hangs;
      for (const auto& s : sessions) hangs.push_back(s.collectiveLogs);
      l.checks = lessons::checkClaims(l.lesson, stats, hangs);
      l.scores.clear();
      for (size_t i = 0; i < l.answers.size(); ++i) {
        l.scores.push_back(lessons::scoreAnswer(l.lesson, l.lesson.questions[i], l.answers[i], stats));
      }
      l.checked = true;
    }
    drawChecks(l);
    if (l.predictFirst) drawScores(l);
  }
  ImGui::Separator();
}

void startLessonNamed(AppState& state, EngineControl* engine, const std::string& name) {
  lessons::Lesson lesson;
  if (auto err = lessons::loadLesson(name, lesson)) {
    state.lesson.error = *err;
    return;
  }
  startLesson(state, engine, std::move(lesson), state.lesson.predictNext);
}

void drawLessonMenu(AppState& state, EngineControl* engine) {
  ImGui::TextDisabled("Lessons");
  const auto names = lessons::lessonNames();
  const char* preview = state.lesson.active ? state.lesson.lesson.name.c_str() : "pick a lesson...";
  ImGui::BeginDisabled(!engine || engine->busy());
  if (ImGui::BeginCombo("##lesson", preview)) {
    for (const auto& name : names) {
      if (ImGui::Selectable(name.c_str(), state.lesson.active && state.lesson.lesson.name == name)) {
        startLessonNamed(state, engine, name);
      }
    }
    ImGui::EndCombo();
  }
  noteItem("lesson:menu");
  ImGui::EndDisabled();
  ImGui::Checkbox("predict first (interview practice)", &state.lesson.predictNext);
  noteItem("lesson:predict");
  if (!state.lesson.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", state.lesson.error.c_str());
    ImGui::PopStyleColor();
  }
}

}  // namespace shardscope::ui
