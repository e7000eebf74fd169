#include "app/lesson_replay.h"

#include "ui/record_files.h"

namespace shardscope::app {

std::string openLessonRecordings(ui::SessionStore& store, const lessons::Lesson& lesson, const std::string& dir,
                                 const std::vector<std::string>& titles) {
  if (const auto missing = lessons::missingRecordings(lesson, dir); !missing.empty()) {
    return "lesson '" + lesson.name + "' has no recording '" + missing.front() +
           "': record its runs with 'shardscope lesson " + lesson.name + " --record " + dir + "'";
  }
  std::vector<ui::Session> sessions;
  for (size_t i = 0; i < lesson.runs.size(); ++i) {
    const std::string path = dir + "/" + lessons::recordingFileName(lesson.runs[i].label);
    ui::OpenedRecord record = ui::openRecord({path});
    if (!record.error.empty()) return record.error;
    if (record.sessions.size() != 1)
      return "'" + path + "' holds " + std::to_string(record.sessions.size()) + " runs, not one";
    ui::Session& session = record.sessions.front();
    if (i < titles.size()) session.title = titles[i];
    sessions.push_back(std::move(session));
  }
  auto lock = store.lock();
  store.clear();
  for (auto& s : sessions) store.add(std::move(s));
  return "";
}

namespace {

// Whether these are `lesson`'s runs, as the lesson view starts them: its configurations, titled
// by its labels.
bool areTheRunsOf(const lessons::Lesson& lesson, const std::vector<config::RunConfig>& runs,
                  const std::vector<std::string>& titles) {
  if (runs.size() != lesson.runs.size() || titles.size() != runs.size()) return false;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (titles[i].rfind(lesson.runs[i].label + ": ", 0) != 0) return false;
    if (runs[i].toJson() != lesson.runs[i].config.toJson()) return false;
  }
  return true;
}

}  // namespace

void LessonReplayControl::startTitled(const std::vector<config::RunConfig>& runs,
                                      const std::vector<std::string>& titles) {
  for (const auto& lesson : lessons_) {
    if (!areTheRunsOf(lesson, runs, titles)) continue;
    error_ = openLessonRecordings(store_, lesson, recordingsOf_(lesson.name), titles);
    return;
  }
  inner_.startTitled(runs, titles);  // not a lesson it has recordings of: run, where runs can
}

}  // namespace shardscope::app
