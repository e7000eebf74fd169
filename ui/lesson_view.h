// A lesson in the window: its runs start with the sessions titled by their labels; a caption bar
// above the timelines walks through the captions (Prev / Next, or N / P), each bringing its tab to
// the front and putting the playhead where it points; once the runs have ended, the lesson's claims
// are checked on what they measured and shown as holding or not, with the figures.
#pragma once

#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "ui/lesson_state.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct AppState;

// Makes `lesson` the app's lesson. Its runs start at once (with an engine), or, predicting first,
// once the questions have answers (lockInAnswers).
void startLesson(AppState& state, EngineControl* engine, lessons::Lesson lesson, bool predictFirst = false);

// The lesson called `name`, read and started as the Lessons menu starts it (predicting first when
// its box is ticked); one that cannot be read leaves its error in state.lesson.error.
void startLessonNamed(AppState& state, EngineControl* engine, const std::string& name);

// Reads the typed answers; when all can be read, keeps them and starts the runs. False otherwise.
bool lockInAnswers(AppState& state, EngineControl* engine);

// The caption bar; nothing when no lesson is active. `runsDone`: no run is in progress.
void drawLessonBar(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, bool runsDone);

// The sidebar's Lessons menu: every lesson in assets/lessons; picking one starts it.
void drawLessonMenu(AppState& state, EngineControl* engine);

}  // namespace shardscope::ui
