// `shardscope lesson [NAME]`: lists the lessons, or runs one in the terminal: its runs (progress as
// `run`), its captions, then its claims checked on what the runs measured. The window's side of a
// lesson is ui/lesson_view.h.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/launch/run_types.h"
#include "lessons/lesson.h"
#include "lessons/prediction.h"

namespace shardscope::app {

// Prints every lesson with its title; 0.
int listLessons();

// The lessons that ask questions (predict first), comma-separated.
std::string lessonsWithQuestions();

struct LessonOptions {
  std::string traceDir;   // each run's trace there as LABEL.json (spaces as '_')
  std::string recordDir;  // --record: each run's recording there as LABEL.pftrace, for replays
  bool predict = false;  // ask the lesson's questions before the runs and score the answers after
  std::string answers;   // --answers: ';' between them, instead of asking on the terminal
  // --answers as read by readAnswers: each as typed, and read against its question.
  std::vector<std::string> typed;
  std::vector<lessons::Answer> given;
};

// options.answers read against the lesson's questions into options.typed and options.given; an
// error names the answer and what is expected.
std::optional<std::string> readAnswers(const lessons::Lesson& lesson, LessonOptions& options);

// Why a run's trace cannot be written into --trace-dir (outputsProblem's reasons), or nothing:
// a usage error before the first run, rather than a run failed after the others.
std::optional<std::string> lessonOutputsProblem(const lessons::Lesson& lesson, const LessonOptions& options);

// Runs the lesson's runs one after another with `train`, prints the captions and the claims'
// checks (and, predicting, the answers scored). Returns 0 when every run ended with its trace
// written and every claim holds, 1 otherwise, 2 when the input ends before every question has an
// answer.
int runLessonInTerminal(const lessons::Lesson& lesson, const LessonOptions& options,
                        const std::function<engine::RunResult(const config::RunConfig&)>& train);

}  // namespace shardscope::app
