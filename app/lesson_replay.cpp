#include "app/lesson_replay.h"

#include "ui/record_files.h"

namespace shardscope::app {

std::string openLessonRecordings(ui::SessionStore& store, const lessons::Lesson& lesson, const std::string& dir,
                                 const std::vector<std::string>& titles) {
  if (const auto missing = lessons::missingRecordings(lesson, dir); !missing.empty()) {
    return "lesson '" + lesson.name + "' has no recording '" + missing.front() + "': record its runs with 'shardscope lesson " +
           lesson.name + " --record " + dir + "'";
  }
  std::vector<ui::Session> sessions;
  for (size_t i = 0; i < lesson.runs.size(); ++i) {
    const std::string path = dir + "/" + lessons::recordingFileName(lesson.runs[i].label);
    ui::OpenedRecord record = ui::openRecord({path});
    if (!record.error.empty()) return record.error;
    if (record.sessions.size() != 1) return "'" + path + "' holds " + std::to_string(record.sessions.size()) + " runs, not one";
    ui::Session& session = record.sessions.front();
    if (i < titles.size()) session.title = titles[i];
    sessions.push_back(std::move(session));
  }
  auto lock = store.lock();
  store.clear();
  for (auto& s : sessions) store.add(std::move(s));
  return "";
}

void LessonReplayControl::startTitled(const std::vector<RunConfig>& runs, const std::vector<std::string>& titles) {
  // Another lesson's runs (picked from the menu meanwhile) are not in `dir_`: they run, where they can.
  bool ours = titles.size() == lesson_.runs.size();
  for (size_t i = 0; ours && i < titles.size(); ++i) ours = titles[i].rfind(lesson_.runs[i].label + ": ", 0) == 0;
  if (!ours) return inner_.startTitled(runs, titles);
  error_ = openLessonRecordings(store_, lesson_, dir_, titles);
}

}  // namespace shardscope::app
