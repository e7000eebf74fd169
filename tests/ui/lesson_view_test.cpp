// A lesson in the window, driven as a teacher and a candidate drive it: the runs start titled by
// their labels, Next / N walk the captions (each bringing its tab and the run the playhead follows),
// and predict first holds the runs back until every answer can be read.
#include <gtest/gtest.h>

#include "tests/ui/app_driver.h"
#include "ui/app_window.h"
#include "ui/key_codes.h"
#include "ui/lesson_view.h"
#include "ui/synthetic_recording.h"

namespace shardscope::ui {
namespace {

class TitledEngine : public EngineControl {
 public:
  void startRun(const config::RunConfig&) override {}
  void startCompare(const std::vector<config::RunConfig>& runs) override { started.push_back(runs); }
  void startTitled(const std::vector<config::RunConfig>& runs, const std::vector<std::string>& t) override {
    started.push_back(runs);
    titles = t;
  }
  void stop() override {}
  void stepGate() override {}
  void continueGate() override {}
  bool busy() const override { return false; }
  std::string checkConfig(const config::RunConfig&) const override { return ""; }
  std::vector<std::vector<config::RunConfig>> started;
  std::vector<std::string> titles;
};

class LessonView : public ::testing::Test {
 protected:
  lessons::Lesson load(const std::string& name) {
    lessons::Lesson lesson;
    const auto err = lessons::loadLesson(name, lesson);
    EXPECT_FALSE(err) << *err;
    return lesson;
  }
  // What the engine would have put in the store: one finished session per run, titled as asked.
  void addSessions(const std::vector<std::string>& titles) {
    auto lock = store_.lock();
    for (const auto& title : titles) {
      Session s;
      s.title = title;
      s.status = SessionStatus::Done;
      s.recording = syntheticRecording(2, 500, 4);
      store_.add(std::move(s));
    }
  }
  SessionStore store_;
  AppState state_;
  AppDriver app_{store_, state_, 1920, 1080};
  TitledEngine engine_;
};

TEST_F(LessonView, RunsStartTitledByTheirLabels) {
  startLesson(state_, &engine_, load("prefetch"));
  ASSERT_EQ(engine_.started.size(), 1u);
  ASSERT_EQ(engine_.started[0].size(), 2u);
  EXPECT_EQ(engine_.started[0][0].prefetch, 0);
  EXPECT_EQ(engine_.started[0][1].prefetch, 1);
  EXPECT_EQ(engine_.titles, (std::vector<std::string>{"prefetch 0: full_shard (FULL_SHARD, ZeRO-3)",
                                                      "prefetch 1: full_shard (FULL_SHARD, ZeRO-3)"}));
}

TEST_F(LessonView, NextCaptionBringsItsTabAndTheRunItFollows) {
  startLesson(state_, &engine_, load("ddp_vs_fsdp"));
  addSessions(engine_.titles);
  app_.draw(&engine_);
  app_.draw(&engine_);
  ASSERT_TRUE(app_.items().count("lesson:caption"));
  EXPECT_EQ(state_.lesson.appliedCaption, 0);
  app_.clickOn("lesson:next", &engine_);
  app_.draw(&engine_);
  EXPECT_EQ(state_.lesson.caption, 1);
  EXPECT_TRUE(state_.holdingsShown) << "caption 2 opens Who holds what";
  EXPECT_EQ(state_.playhead.session, 0) << "on ddp's run";
  app_.pressKey(keys::kN, false, &engine_);
  app_.draw(&engine_);
  EXPECT_EQ(state_.lesson.caption, 2);
  EXPECT_EQ(state_.playhead.session, 1) << "caption 3 follows full_shard's run";
  EXPECT_FALSE(state_.lesson.checks.empty()) << "the runs have ended: the claims are checked";
}

// The straggler lesson's third caption speaks of its fourth run, below the fold at 1920x1080: the
// timelines scroll to it, and back up for a caption on the first.
TEST_F(LessonView, ACaptionBringsItsRunIntoView) {
  startLesson(state_, &engine_, load("straggler"));
  addSessions(engine_.titles);
  for (int i = 0; i < 3; ++i) app_.draw(&engine_);
  ASSERT_TRUE(state_.timelinesScroll) << "four runs do not fit: otherwise there is nothing to bring into view";
  app_.clickOn("lesson:next", &engine_);
  app_.clickOn("lesson:next", &engine_);
  for (int i = 0; i < 3; ++i) app_.draw(&engine_);
  EXPECT_EQ(state_.playhead.session, 3) << "caption 3 follows full_shard_slow";
  EXPECT_GT(state_.timelinesScrollY, 0.0f) << "scrolled down to it";
  state_.lesson.caption = 0;
  state_.lesson.appliedCaption = -1;
  state_.lesson.lesson.captions[0].run = "ddp";
  for (int i = 0; i < 3; ++i) app_.draw(&engine_);
  EXPECT_EQ(state_.timelinesScrollY, 0.0f) << "back up to the first run";
}

TEST_F(LessonView, ACaptionFillsTheWhatIfWithItsWorkedExample) {
  state_.estimate.parameters[0] = '\0';
  startLesson(state_, &engine_, load("seed_7b_3gpus"));
  addSessions(engine_.titles);
  app_.draw(&engine_);
  EXPECT_STREQ(state_.estimate.parameters, "7B") << "caption 1 opens the seed's 7B example";
  EXPECT_STREQ(state_.estimate.worlds, "1,3");
}

TEST_F(LessonView, PredictFirstHoldsTheRunsUntilEveryAnswerReads) {
  startLesson(state_, &engine_, load("ddp_vs_fsdp"), /*predictFirst=*/true);
  EXPECT_TRUE(engine_.started.empty()) << "nothing runs before the predictions";
  app_.draw(&engine_);
  ASSERT_TRUE(app_.items().count("lesson:lock-in"));
  app_.clickOn("lesson:lock-in", &engine_);
  app_.draw(&engine_);
  EXPECT_TRUE(engine_.started.empty()) << "no answers yet: Lock in is disabled";

  state_.lesson.typed = {"lots", "ddp, full_shard"};
  app_.draw(&engine_);
  app_.clickOn("lesson:lock-in", &engine_);
  app_.draw(&engine_);
  EXPECT_TRUE(engine_.started.empty()) << "'lots' is not a size";

  state_.lesson.typed = {"27 MiB", "ddp, full_shard"};
  app_.draw(&engine_);
  app_.clickOn("lesson:lock-in", &engine_);
  app_.draw(&engine_);
  ASSERT_EQ(engine_.started.size(), 1u) << "locked in: the runs start";
  EXPECT_TRUE(state_.lesson.locked);
  ASSERT_EQ(state_.lesson.answers.size(), 2u);
  EXPECT_DOUBLE_EQ(state_.lesson.answers[0].value, 27.0 * 1024 * 1024);
}

}  // namespace
}  // namespace shardscope::ui
