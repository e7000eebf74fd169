// Every lesson file loads, every caption points at something its run has (a tab, an event group or
// time on the named run's timeline), and every claim a lesson makes holds on the run it makes.
// The claims are checked by `shardscope lesson NAME` itself on real runs, as a user would run them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "lessons/lesson.h"
#include "lessons/prediction.h"
#include "tests/support/run_cli.h"
#include "trace/trace_reader.h"
#include "ui/app_window.h"
#include "ui/playhead.h"

namespace shardscope::lessons {
namespace {

TEST(Lessons, TheIssuesLessonsAllExistAndLoad) {
  const auto names = lessonNames();
  for (const char* wanted :
       {"accordion", "ddp_vs_fsdp", "zero_stages", "seed_7b_3gpus", "seed_70b", "lora", "grad_accumulation",
        "activation_checkpointing", "prefetch", "bucket_size", "straggler", "pipeline", "v_schedules"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), wanted), names.end()) << wanted;
  }
  for (const auto& name : names) {
    Lesson lesson;
    const auto err = loadLesson(name, lesson);
    EXPECT_FALSE(err) << *err;
    EXPECT_FALSE(lesson.captions.empty()) << name;
    EXPECT_FALSE(lesson.claims.empty()) << name << ": a lesson claims something its run shows";
    for (const auto& caption : lesson.captions) {
      ui::EstimatePanelState estimate;
      if (!caption.whatIf.empty()) EXPECT_TRUE(ui::applyWhatIfExample(estimate, caption.whatIf)) << caption.whatIf;
    }
  }
}

std::string writeLesson(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/bad.json";
  std::ofstream(path) << body;
  return path;
}

TEST(Lessons, BadFilesNameTheEntryAndTheFix) {
  const auto dir = testing::freshTempDir("lesson_files");
  const std::string runs = R"("runs": [{"label": "a", "strategy": "ddp"}, {"label": "b", "strategy": "full_shard"}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"title": "t", "teaches": "x", )" + runs + R"(, "captions": [{"text": "c", "run": "z"}]})",
       "names run 'z'; the runs are a, b"},
      {R"({"title": "t", "teaches": "x", )" + runs + R"(, "captions": [{"text": "c", "tab": "charts"}]})",
       "names tab 'charts'"},
      {R"({"title": "t", "teaches": "x", )" + runs +
           R"(, "captions": [{"text": "c"}], "claims": [{"says": "s", "less": ["a", "weight"], "than": ["b", "peak"]}]})",
       "names figure 'weight'; the figures are peak"},
      {R"({"title": "t", "teaches": "x", "runs": [{"label": "a", "world": 0}], "captions": [{"text": "c"}]})",
       "run 'a': --world is 0"},
      {R"({"title": "t", "teaches": "x", )" + runs +
           R"(, "captions": [{"text": "c"}], "claims": [{"says": "s", "figure": "peak", "order": ["a"]}]})",
       "\"order\" takes two or more runs"},
      {R"({"title": "t")", "not valid JSON"},
      // A title of the wrong kind is not "missing".
      {R"({"title": 5, "teaches": "x", )" + runs + R"(, "captions": [{"text": "c"}]})",
       "\"title\" is a number where a string belongs"},
      {R"({"teaches": "x", )" + runs + R"(, "captions": [{"text": "c"}]})", "\"title\" is missing (a string)"},
      {R"({"title": "t", "title": "u", "teaches": "x", )" + runs + R"(, "captions": [{"text": "c"}]})",
       "the key \"title\" appears twice"},
  };
  for (const auto& [body, expected] : cases) {
    Lesson lesson;
    const auto err = loadLesson(writeLesson(dir, body), lesson);
    ASSERT_TRUE(err) << body;
    EXPECT_NE(err->find(expected), std::string::npos) << *err;
  }
  Lesson lesson;
  const auto missing = loadLesson("no_such_lesson", lesson);
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->find("the lessons are accordion"), std::string::npos) << *missing;
}

// The check compares what it is given: an ordering that does not fall does not hold.
TEST(Lessons, ClaimsAreCheckedAgainstTheFiguresGiven) {
  Lesson lesson;
  lesson.runs = {{"big", {}}, {"small", {}}};
  Claim order;
  order.says = "big above small";
  order.order = {{"big", "peak"}, {"small", "peak"}};
  lesson.claims = {order};
  stats::RankStats big, small;
  big.peakTotal = 200;
  small.peakTotal = 100;
  EXPECT_TRUE(checkClaims(lesson, {{big}, {small}})[0].holds);
  EXPECT_FALSE(checkClaims(lesson, {{small}, {big}})[0].holds);
  const auto unrun = checkClaims(lesson, {{big}, {}});
  EXPECT_FALSE(unrun[0].holds);
  EXPECT_NE(unrun[0].measured.find("small has not run"), std::string::npos) << unrun[0].measured;
}

TEST(Predictions, AnswersAreReadInTheFiguresUnit) {
  Question bytes;
  bytes.value = {"a", "peak"};
  Question seconds;
  seconds.value = {"a", "step_time"};
  Question calls;
  calls.value = {"a", "all_gather_per_step"};
  std::string error;
  EXPECT_DOUBLE_EQ(readAnswer(bytes, "30 MiB", error)->value, 30.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(readAnswer(bytes, "30MB", error)->value, 30e6);
  EXPECT_DOUBLE_EQ(readAnswer(bytes, "1234", error)->value, 1234);
  EXPECT_DOUBLE_EQ(readAnswer(seconds, "12 ms", error)->value, 0.012);
  EXPECT_DOUBLE_EQ(readAnswer(calls, "9", error)->value, 9);
  EXPECT_FALSE(readAnswer(bytes, "lots", error));
  EXPECT_NE(error.find("'lots' is not bytes, e.g. 30 MiB"), std::string::npos) << error;
  EXPECT_FALSE(readAnswer(bytes, "-3 MiB", error));
  EXPECT_FALSE(readAnswer(seconds, "12 MiB", error)) << "a size is not a time";

  Question order;
  order.figure = "peak";
  order.order = {"zero1", "ddp", "b"};
  EXPECT_EQ(readAnswer(order, "ddp, zero1, b", error)->order, (std::vector<std::string>{"ddp", "zero1", "b"}));
  EXPECT_EQ(readAnswer(order, "ddp > b > zero1", error)->order, (std::vector<std::string>{"ddp", "b", "zero1"}));
  EXPECT_FALSE(readAnswer(order, "ddp, ddp, b", error)) << "each run once";
  EXPECT_FALSE(readAnswer(order, "ddp, zero1", error)) << "every run";
  EXPECT_NE(answerHint(order).find("b, ddp, zero1"), std::string::npos)
      << "the hint lists the runs alphabetically, not in the lesson's (right) order: " << answerHint(order);
}

TEST(Predictions, ScoresFollowTheDistanceFromTheMeasurement) {
  Lesson lesson;
  lesson.runs = {{"big", {}}, {"mid", {}}, {"small", {}}};
  stats::RankStats big, mid, small;
  big.peakTotal = 400;
  mid.peakTotal = 200;
  small.peakTotal = 100;
  const std::vector<std::vector<stats::RankStats>> stats = {{big}, {mid}, {small}};
  Question value;
  value.value = {"mid", "peak"};
  auto points = [&](double answer) { return scoreAnswer(lesson, value, Answer{answer, {}}, stats)->points; };
  EXPECT_DOUBLE_EQ(points(200), 100);
  EXPECT_DOUBLE_EQ(points(400), 0) << "2x off";
  EXPECT_DOUBLE_EQ(points(100), 0) << "half";
  EXPECT_NEAR(points(240), 100 * (1 - std::log2(1.2)), 1e-9);
  EXPECT_GT(points(240), points(300));

  Question order;
  order.figure = "peak";
  order.order = {"big", "mid", "small"};
  auto ordered = [&](std::vector<std::string> answer) {
    return scoreAnswer(lesson, order, Answer{0, answer}, stats)->points;
  };
  EXPECT_DOUBLE_EQ(ordered({"big", "mid", "small"}), 100);
  EXPECT_DOUBLE_EQ(ordered({"small", "mid", "big"}), 0);
  EXPECT_NEAR(ordered({"big", "small", "mid"}), 100.0 * 2 / 3, 1e-9);
  EXPECT_FALSE(scoreAnswer(lesson, value, Answer{200, {}}, {{big}, {}, {small}})) << "mid did not run";
}

TEST(Predictions, PredictFirstInTheTerminalScoresTheAnswers) {
  const auto r = testing::runShardscope({"lesson", "ddp_vs_fsdp", "--predict", "--answers", "27 MiB;ddp,full_shard"});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("your predictions, scored against these runs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("you said: 27 MiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 of 1 pairs in the measured order: 100 / 100"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("score: "), std::string::npos) << r.output;
}

class LessonRun : public ::testing::TestWithParam<std::string> {};

TEST_P(LessonRun, ClaimsHoldOnItsOwnRunAndCaptionsPointAtWhatItHas) {
  Lesson lesson;
  ASSERT_FALSE(loadLesson(GetParam(), lesson));
  const auto dir = testing::freshTempDir("lesson_" + GetParam());
  const auto r = testing::runShardscope({"lesson", GetParam(), "--trace-dir", dir});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output.find("does NOT hold"), std::string::npos) << r.output;
  size_t holds = 0;
  for (size_t at = r.output.find("holds:"); at != std::string::npos; at = r.output.find("holds:", at + 1)) ++holds;
  EXPECT_EQ(holds, lesson.claims.size()) << r.output;

  for (const auto& caption : lesson.captions) {
    if (!caption.tab.empty()) EXPECT_TRUE(ui::bottomTabTitle(caption.tab)) << caption.tab;
    if (caption.at.empty()) continue;
    const std::string run = caption.run.empty() ? lesson.runs.front().label : caption.run;
    auto loaded = trace::loadChromeTrace(dir + "/" + traceFileName(run));
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    std::string error;
    const auto t = ui::resolvePlayheadPosition(caption.at, ui::eventGroupMarks(loaded.recording), error);
    EXPECT_TRUE(t.has_value()) << GetParam() << ": caption '" << caption.text << "' points at '" << caption.at
                               << "' on run " << run << ": " << error;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryLesson, LessonRun, ::testing::ValuesIn(lessonNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace shardscope::lessons
