// The Diff tab over two real runs (one OS process per rank), a slow rank in B: the verdict, and
// every change that names a place names one the playhead can go to in B.
#include "ui/diff_view.h"

#include <gtest/gtest.h>

#include "stats/run_stats.h"
#include "tests/support/run_cli.h"
#include "ui/headless_frame.h"
#include "ui/playhead.h"
#include "ui/record_files.h"

namespace shardscope::ui {
namespace {

Session recorded(const std::string& dir, const std::string& name, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   "gpt",
                                   "--layers",
                                   "2",
                                   "--hidden",
                                   "32",
                                   "--seq",
                                   "8",
                                   "--batch",
                                   "4",
                                   "--world",
                                   "2",
                                   "--steps",
                                   "5",
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

}  // namespace
}  // namespace shardscope::ui
