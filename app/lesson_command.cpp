#include "app/lesson_command.h"

#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/interrupt.h"
#include "files/unfinished_outputs.h"

namespace shardscope::app {

std::string lessonsWithQuestions() {
  std::string names;
  for (const auto& name : lessons::lessonNames()) {
    lessons::Lesson lesson;
    if (!lessons::loadLesson(name, lesson) && !lesson.questions.empty()) names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

int listLessons() {
  const auto names = lessons::lessonNames();
  if (names.empty()) {
    std::printf("no lessons in %s (set SHARDSCOPE_LESSONS to the folder of the lesson files)\n",
                lessons::lessonDirectory().c_str());
    return 0;
  }
  std::printf("lessons in %s:\n", lessons::lessonDirectory().c_str());
  for (const auto& name : names) {
    lessons::Lesson lesson;
    const auto err = lessons::loadLesson(name, lesson);
    std::printf("  %-26s %s\n", name.c_str(), err ? ("(cannot be read: " + *err + ")").c_str() : lesson.title.c_str());
  }
  std::printf("shardscope lesson NAME runs one here; shardscope --lesson NAME opens it in the app.\n");
  return 0;
}

std::optional<std::string> readAnswers(const lessons::Lesson& lesson, LessonOptions& options) {
  std::vector<std::string>& parts = options.typed;
  parts.clear();
  options.given.clear();
  std::stringstream in(options.answers);
  for (std::string part; std::getline(in, part, ';');) parts.push_back(part);
  if (parts.size() != lesson.questions.size()) {
    return "--answers has " + std::to_string(parts.size()) + " answers and lesson '" + lesson.name + "' asks " +
           std::to_string(lesson.questions.size()) + " questions: give one per question, ';' between them";
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string error;
    auto answer = lessons::readAnswer(lesson.questions[i], parts[i], error);
    if (!answer) return "--answers, answer " + std::to_string(i + 1) + ": " + error;
    options.given.push_back(*answer);
  }
  return std::nullopt;
}

namespace {

// Asks each question on the terminal until its answer can be read; false at the end of input.
bool askQuestions(const lessons::Lesson& lesson, std::vector<std::string>& typed,
                  std::vector<lessons::Answer>& answers) {
  std::printf("predict first: answer before the runs start; each answer is scored against the measurement.\n");
  for (const auto& q : lesson.questions) {
    for (;;) {
      std::printf("\n%s\n(%s) > ", q.ask.c_str(), lessons::answerHint(q).c_str());
      std::fflush(stdout);
      std::string line;
      if (!std::getline(std::cin, line)) return false;
      std::string error;
      if (auto answer = lessons::readAnswer(q, line, error)) {
        typed.push_back(line);
        answers.push_back(*answer);
        break;
      }
      std::printf("%s\n", error.c_str());
    }
  }
  std::printf("\n");
  return true;
}

void printScores(const lessons::Lesson& lesson, const std::vector<std::string>& typed,
                 const std::vector<lessons::Answer>& answers, const std::vector<std::vector<stats::RankStats>>& stats) {
  std::printf("\nyour predictions, scored against these runs:\n");
  double total = 0;
  int scored = 0;
  for (size_t i = 0; i < lesson.questions.size() && i < answers.size(); ++i) {
    const auto& q = lesson.questions[i];
    std::printf("  %zu. %s\n     you said: %s\n", i + 1, q.ask.c_str(), typed[i].c_str());
    const auto score = lessons::scoreAnswer(lesson, q, answers[i], stats);
    if (!score) {
      std::printf("     not scored: a run it needs did not end\n");
      continue;
    }
    std::printf("     measured: %s\n     %s: %.0f / 100\n", score->measured.c_str(), score->verdict.c_str(),
                score->points);
    total += score->points;
    ++scored;
  }
  if (scored > 0) std::printf("  score: %.0f / 100 (the mean of %d)\n", total / scored, scored);
}

}  // namespace

namespace {

// Where a run's trace goes: --trace-dir's LABEL.json, --record's LABEL.pftrace, or nowhere ("").
std::string lessonTracePath(const LessonOptions& options, const std::string& label) {
  if (!options.recordDir.empty()) return options.recordDir + "/" + lessons::recordingFileName(label);
  if (!options.traceDir.empty()) return options.traceDir + "/" + lessons::traceFileName(label);
  return "";
}

}  // namespace

std::optional<std::string> lessonOutputsProblem(const lessons::Lesson& lesson, const LessonOptions& options) {
  const std::string option =
      options.recordDir.empty() ? "--trace-dir '" + options.traceDir + "'" : "--record '" + options.recordDir + "'";
  for (const auto& run : lesson.runs) {
    config::RunConfig config = run.config;
    config.tracePath = lessonTracePath(options, run.label);
    if (config.tracePath.empty()) return std::nullopt;
    if (auto problem = config::outputsProblem(config)) return option + ": " + *problem;
  }
  return std::nullopt;
}

int runLessonInTerminal(const lessons::Lesson& lesson, const LessonOptions& options,
                        const std::function<engine::RunResult(const config::RunConfig&)>& train) {
  std::printf("lesson %s: %s\n%s\n\n", lesson.name.c_str(), lesson.title.c_str(), lesson.teaches.c_str());
  std::fflush(stdout);
  std::vector<std::string> typed = options.typed;  // given with --answers, else asked here
  std::vector<lessons::Answer> answers = options.given;
  if (options.predict && answers.empty() && !askQuestions(lesson, typed, answers)) {
    std::fprintf(stderr,
                 "shardscope: error: the input ended before every question had an answer; give them with "
                 "--answers 'A1;A2;...'\n");
    return 2;
  }
  std::vector<std::vector<stats::RankStats>> stats;
  std::vector<std::shared_ptr<const trace::CollectiveLogs>> hangs;  // each run's last collectives, where it hung
  bool allRan = true;
  std::vector<std::pair<std::string, std::string>> traces;  // for a second Ctrl-C to say which it kept
  for (const auto& run : lesson.runs) {
    if (const auto path = lessonTracePath(options, run.label); !path.empty()) traces.push_back({"trace", path});
  }
  files::announceOutputs(traces);
  for (size_t i = 0; i < lesson.runs.size(); ++i) {
    if (interruptSignal()) break;
    config::RunConfig config = lesson.runs[i].config;
    config.tracePath = lessonTracePath(options, lesson.runs[i].label);
    std::printf("run %zu/%zu: %s\n", i + 1, lesson.runs.size(), lesson.runs[i].label.c_str());
    std::fflush(stdout);
    const engine::RunResult result = train(config);
    const bool hungAsMeant = !result.ok && lesson.runs[i].expectsHang && result.lastCollectives;
    if (hungAsMeant) {
      std::printf("run '%s' hung, as the lesson means it to: %s\n", lesson.runs[i].label.c_str(), result.error.c_str());
    } else if (!result.ok) {
      std::fprintf(stderr, "shardscope: lesson run '%s' failed: %s\n", lesson.runs[i].label.c_str(),
                   result.error.c_str());
      allRan = false;
    }
    // A trace that could not be written fails the lesson, as an output fails run (exit 1).
    for (const auto& e : result.outputErrors) std::fprintf(stderr, "shardscope: %s\n", e.c_str());
    allRan &= result.outputErrors.empty();
    hangs.push_back(result.lastCollectives);
    stats.push_back(result.ok ? stats::computeRankStats(config, result.recording, result.parameterCount, result.device)
                              : std::vector<stats::RankStats>{});
  }
  std::printf("\ncaptions (in the app: shardscope --lesson %s; N / P step through them):\n", lesson.name.c_str());
  for (size_t i = 0; i < lesson.captions.size(); ++i) {
    const auto& c = lesson.captions[i];
    std::string where = c.tab;
    if (!c.at.empty()) where += (where.empty() ? "" : ", ") + std::string("at ") + c.at;
    if (!c.run.empty()) where += (where.empty() ? "" : ", ") + c.run;
    std::printf("  %zu. %s%s%s\n", i + 1, c.text.c_str(), where.empty() ? "" : "  [",
                where.empty() ? "" : (where + "]").c_str());
  }
  std::printf("\nclaims, checked on these runs:\n");
  bool allHold = true;
  for (const auto& check : lessons::checkClaims(lesson, stats, hangs)) {
    std::printf("  %-13s %s\n  %-13s %s\n", check.holds ? "holds:" : "does NOT hold:", check.says.c_str(), "",
                check.measured.c_str());
    allHold &= check.holds;
  }
  if (options.predict) printScores(lesson, typed, answers, stats);
  if (const int signal = interruptSignal()) {
    std::fprintf(stderr, "shardscope: interrupted by %s: the lesson's runs were stopped after %zu of %zu.\n",
                 signalName(signal).c_str(), stats.size(), lesson.runs.size());
    return 128 + signal;
  }
  std::fflush(stdout);
  return allRan && allHold ? 0 : 1;
}

}  // namespace shardscope::app
