// The Diff tab over two real runs (one OS process per rank), a slow rank in B: the verdict, and
// every change that names a place names one the playhead can go to in B.
#include "ui/diff_view.h"

#include <gtest/gtest.h>

#include "stats/run_stats.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "ui/app_state.h"
#include "ui/key_codes.h"
#include "ui/headless_frame.h"
#include "ui/playhead.h"
#include "ui/record_files.h"

namespace shardscope::ui {
namespace {

// Sized so that the slowed rank's compute (ten times its own, by a sleep) outweighs the step's
// fixed costs and their noise on a loaded machine: on a smaller model (hidden 32, 5 steps) B was
// slower by 20 to 90 % but within the noise of 4 steps in 6 of 12 runs beside two busy cores.
Session recorded(const std::string& dir, const std::string& name, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   "gpt",
                                   "--layers",
                                   "2",
                                   "--hidden",
                                   "128",
                                   "--seq",
                                   "32",
                                   "--batch",
                                   "8",
                                   "--world",
                                   "2",
                                   "--steps",
                                   "8",
                                   "--trace",
                                   dir + "/" + name + ".pftrace"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto run = testing::runShardscope(args);
  EXPECT_EQ(run.exitCode, 0) << run.output;
  auto opened = openRecord({dir + "/" + name + ".pftrace"});
  EXPECT_TRUE(opened.error.empty()) << opened.error;
  return opened.sessions.empty() ? Session() : std::move(opened.sessions.front());
}

TEST(DiffView, TheLargestChangesPointWhereThePlayheadCanGo) {
  const std::string dir = testing::freshTempDir("diff_view");
  std::vector<Session> sessions;
  sessions.push_back(recorded(dir, "a", {"--strategy", "full_shard"}));
  sessions.push_back(recorded(dir, "b", {"--strategy", "full_shard", "--slow-rank", "1:10"}));
  std::vector<std::vector<stats::RankStats>> figures;
  for (const auto& s : sessions) figures.push_back(stats::computeRankStats(s.config, s.recording, s.parameterCount));
  DiffViewState state;
  refreshDiff(state, sessions, figures, 7);
  ASSERT_TRUE(state.error.empty()) << state.error;
  EXPECT_EQ(state.diff.verdict, stats::Verdict::Regression) << state.diff.reason;
  const auto marks = eventGroupMarks(sessions[1].recording);
  int placed = 0;
  for (const auto& c : state.diff.changes) {
    if (c.at.empty()) continue;
    std::string error;
    EXPECT_TRUE(resolvePlayheadPosition(c.at, marks, error)) << c.figure << " at " << c.at << ": " << error;
    ++placed;
  }
  EXPECT_GT(placed, 10) << "each rank's collectives and compute";
  HeadlessImGui imgui(1600, 900);
  EXPECT_GT(imgui.frame([&] { drawDiffTab(state, sessions); }), 500);
  refreshDiff(state, {sessions[0]}, {figures[0]}, 8);
  EXPECT_NE(state.error.find("view --diff A B"), std::string::npos) << "one recording: how to open two";
}

// The diff session in the window: with the Diff tab in front, A is lined up with B at the
// playhead's step, the playhead stands at the same event group in both, B's lanes carry A's
// memory outline (D: B - A) and mark the collectives that moved; another tab undoes it all.
TEST(DiffView, TheDiffTabLinesTheRunsUpAndMarksWhatMoved) {
  const std::string dir = testing::freshTempDir("diff_session");
  SessionStore store;
  {
    auto lock = store.lock();
    store.add(recorded(dir, "a", {"--strategy", "full_shard"}));
    store.add(recorded(dir, "b", {"--strategy", "full_shard", "--slow-rank", "1:10"}));
  }
  AppState state;
  auto app = AppDriver::viewOnly(store, state);
  state.openTab = bottomTabTitle("diff");
  state.playhead.session = 1;
  state.pendingAt = "forward blocks.1@2";
  for (int i = 0; i < 3; ++i) app->draw();
  ASSERT_EQ(state.shownTab, "diff");
  ASSERT_EQ(state.diffOverlay.baseline, &store.sessions()[0].recording);
  const auto& marksA = state.marks[0];
  const auto& marksB = state.marks[1];
  const int inB = groupAtOrBefore(marksB, state.alignment.playheadNs[1]);
  const int inA = groupAtOrBefore(marksA, state.alignment.playheadNs[0]);
  ASSERT_GE(inA, 0);
  ASSERT_GE(inB, 0);
  EXPECT_EQ(marksA[static_cast<size_t>(inA)].label(), "forward blocks.1");
  EXPECT_EQ(marksB[static_cast<size_t>(inB)].label(), "forward blocks.1");
  EXPECT_EQ(marksA[static_cast<size_t>(inA)].step, 2);
  EXPECT_EQ(state.alignment.step, 2);
  const auto stepStart = [](const std::vector<EventGroupMark>& marks) {
    for (const auto& m : marks) {
      if (m.step == 2) return m.tNs;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(state.alignment.shiftNs[0], stepStart(marksA) - stepStart(marksB));
  EXPECT_GT(state.lastStats.ghostColumns, 100) << "A's outline over B's lanes";
  EXPECT_GT(state.lastStats.diffMarks, 0) << "rank 0's collectives wait for the slow rank 1 in B";
  bool worseOnRank0 = false;
  for (const auto& m : state.diff.diff.marks) worseOnRank0 |= m.rank == 0 && m.worse;
  EXPECT_TRUE(worseOnRank0);
  const auto noteSays = [&](const std::string& text) {
    for (const auto& [name, rect] : app->items()) {
      if (name.rfind("lane-text:diff@", 0) == 0 && name.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(noteSays("outline: A's total"));
  app->pressKey(keys::kD);
  app->draw();
  EXPECT_TRUE(state.display.diffDifference);
  EXPECT_TRUE(noteSays("B - A")) << "D: the difference in place of the outline";
  EXPECT_GT(state.lastStats.ghostColumns, 0);
  state.openTab = bottomTabTitle("comparison");
  for (int i = 0; i < 3; ++i) app->draw();  // the tab in front shows a frame later, and counts the next
  ASSERT_EQ(state.shownTab, "comparison");
  EXPECT_EQ(state.diffOverlay.baseline, nullptr);
  EXPECT_DOUBLE_EQ(state.alignment.shiftNs[0], 0);
  EXPECT_DOUBLE_EQ(state.alignment.playheadNs[0], state.alignment.playheadNs[1]);
  EXPECT_EQ(state.lastStats.diffMarks + state.lastStats.ghostColumns, 0);
}

}  // namespace
}  // namespace shardscope::ui
