// A lesson played from its recordings instead of running it: `shardscope --lesson NAME
// --from-recordings DIR` and the browser's page (which has no engine). The recordings are what
// `shardscope lesson NAME --record DIR` wrote, one LABEL.pftrace per run; each opens as the session
// the lesson's run would have made, titled as the lesson titles it, so every caption, claim,
// question and key works as on a live run.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "ui/session_store.h"

namespace shardscope::app {

// Its runs' recordings into `store` in the lesson's order, titled `titles`; "" or why not.
std::string openLessonRecordings(ui::SessionStore& store, const lessons::Lesson& lesson, const std::string& dir,
                                 const std::vector<std::string>& titles);

// An EngineControl that plays a lesson from its recordings where it would start the lesson's runs,
// and hands every other call to `inner` (the engine's control on the desktop, the page's own in the
// browser). `lessons`: the ones it can replay, each from `recordingsOf(name)`.
class LessonReplayControl final : public ui::EngineControl {
 public:
  using RecordingsOf = std::function<std::string(const std::string& lessonName)>;
  LessonReplayControl(ui::EngineControl& inner, ui::SessionStore& store, std::vector<lessons::Lesson> lessons,
                      RecordingsOf recordingsOf)
      : inner_(inner), store_(store), lessons_(std::move(lessons)), recordingsOf_(std::move(recordingsOf)) {}

  void startRun(const config::RunConfig& config) override { inner_.startRun(config); }
  void startCompare(const std::vector<config::RunConfig>& runs) override { inner_.startCompare(runs); }
  void startTitled(const std::vector<config::RunConfig>& runs, const std::vector<std::string>& titles) override;
  void stop() override { inner_.stop(); }
  void stepGate() override { inner_.stepGate(); }
  void continueGate() override { inner_.continueGate(); }
  bool busy() const override { return inner_.busy(); }
  std::string checkConfig(const config::RunConfig& config) const override { return inner_.checkConfig(config); }
  std::string runsUnavailable() const override { return inner_.runsUnavailable(); }
  std::string startListen(int port, const std::string& dir) override { return inner_.startListen(port, dir); }
  std::string openRecord(const std::vector<std::string>& paths, bool beside) override {
    return inner_.openRecord(paths, beside);
  }
  ui::OpenStatus openStatus() const override { return inner_.openStatus(); }
  const std::string& replayError() const { return error_; }  // why the last replay showed nothing

 private:
  ui::EngineControl& inner_;
  ui::SessionStore& store_;
  std::vector<lessons::Lesson> lessons_;
  RecordingsOf recordingsOf_;
  std::string error_;
};

}  // namespace shardscope::app
