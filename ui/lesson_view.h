// A lesson in the window: its runs start with the sessions titled by their labels; a caption bar
// above the timelines walks through the captions (Prev / Next, or N / P), each bringing its tab to
// the front and putting the playhead where it points; once the runs have ended, the lesson's claims
// are checked on what they measured and shown as holding or not, with the figures.
#pragma once

#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "lessons/prediction.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct AppState;

struct LessonState {
  bool active = false;
  lessons::Lesson lesson;
  int caption = 0;          // the caption shown
  int appliedCaption = -1;  // the caption whose tab and playhead were last applied
  std::vector<lessons::ClaimCheck> checks;  // on the finished runs; empty before
  bool checked = false;                     // the claims (and answers) were checked on them
  std::string error;        // a lesson that could not be loaded (the Lessons menu)
  // Predict first: the questions are answered before the runs start, and scored once they end.
  bool predictFirst = false;  // this lesson is being predicted
  bool predictNext = false;   // the Lessons menu's "predict first" box, for the next lesson picked
  bool locked = false;        // the answers are in; the runs have been started
  bool lockRequested = false; // "Lock in and run" was pressed: lockInAnswers at the next frame's start
  std::vector<std::string> typed;  // the answer fields, one per question
  std::vector<lessons::Answer> answers;
  std::vector<std::optional<lessons::Score>> scores;  // after the runs; nothing where a run failed
};

// Makes `lesson` the app's lesson. Its runs start at once (with an engine), or, predicting first,
// once the questions have answers (lockInAnswers).
void startLesson(AppState& state, EngineControl* engine, lessons::Lesson lesson, bool predictFirst = false);

// Reads the typed answers; when all can be read, keeps them and starts the runs. False otherwise.
bool lockInAnswers(AppState& state, EngineControl* engine);

// The caption bar; nothing when no lesson is active. `runsDone`: no run is in progress.
void drawLessonBar(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, bool runsDone);

// The sidebar's Lessons menu: every lesson in assets/lessons; picking one starts it.
void drawLessonMenu(AppState& state, EngineControl* engine);

}  // namespace shardscope::ui
