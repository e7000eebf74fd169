// A lesson being taught in the window (ui/lesson_view.h teaches it): which, where its captions are,
// its claims once checked, and predict-first's answers. Apart from the view so that the app's state
// (app_state.h) holds it without seeing the view.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "lessons/prediction.h"

namespace shardscope::ui {

struct LessonState {
  bool active = false;
  lessons::Lesson lesson;
  int caption = 0;                          // the caption shown
  int appliedCaption = -1;                  // the caption whose tab and playhead were last applied
  std::vector<lessons::ClaimCheck> checks;  // on the finished runs; empty before
  bool checked = false;                     // the claims (and answers) were checked on them
  std::string error;                        // a lesson that could not be loaded (the Lessons menu)
  // Predict first: the questions are answered before the runs start, and scored once they end.
  bool predictFirst = false;       // this lesson is being predicted
  bool predictNext = false;        // the Lessons menu's "predict first" box, for the next lesson picked
  bool locked = false;             // the answers are in; the runs have been started
  bool lockRequested = false;      // "Lock in and run" was pressed: lockInAnswers at the next frame's start
  std::vector<std::string> typed;  // the answer fields, one per question
  std::vector<lessons::Answer> answers;
  std::vector<std::optional<lessons::Score>> scores;  // after the runs; nothing where a run failed
};

}  // namespace shardscope::ui
