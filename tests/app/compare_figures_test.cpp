// compare's table on the terminal and the app's comparison tab show the same figures for every
// session: both format what stats/comparison_figures.h computes once. Run for real: five
// strategies at four ranks, the table printed by `shardscope compare`, the app's figures from the
// traces that compare wrote, opened as `shardscope view` opens them.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "stats/comparison_figures.h"
#include "tests/support/run_cli.h"
#include "trace/format.h"
#include "ui/figure_bars.h"
#include "ui/panels.h"
#include "ui/record_files.h"

namespace shardscope::app {
namespace {

const std::vector<std::string> kStrategies = {"ddp", "zero1", "shard_grad_op", "full_shard", "hybrid_shard"};

// The comparison table's rows by name (its first 30 columns, trimmed): each a cell per strategy,
// as printComparisonTable lays them out (" %22s" each).
std::map<std::string, std::vector<std::string>> tableRows(const std::string& output) {
  const auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  };
  std::map<std::string, std::vector<std::string>> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() != 30 + 23 * kStrategies.size()) continue;
    auto& cells = rows[trim(line.substr(0, 30))];
    for (size_t i = 0; i < kStrategies.size(); ++i) cells.push_back(trim(line.substr(30 + 23 * i + 1, 22)));
  }
  return rows;
}

TEST(CompareFigures, TheTableAndTheAppAgreeOnEverySession) {
  const std::string dir = testing::freshTempDir("compare_figures");
  std::string strategies;
  for (const auto& s : kStrategies) strategies += (strategies.empty() ? "" : ",") + s;
  const auto run = testing::runShardscope(
      {"compare", "--strategies", strategies, "--world", "4", "--steps", "3", "--trace", dir + "/run.pftrace"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto table = tableRows(run.output);
  for (const char* row : {"step time (slowest rank)", "samples/s (all ranks)", "sent per step (rank 0, ring)",
                          "ratio to ddp", "exposed comm per step", "comm/compute overlap"}) {
    ASSERT_EQ(table[row].size(), kStrategies.size()) << row << " in\n" << run.output;
  }

  std::vector<std::string> traces;
  for (const auto& s : kStrategies) traces.push_back(dir + "/run." + s + ".pftrace");
  const auto opened = ui::openRecord(traces);
  ASSERT_TRUE(opened.error.empty()) << opened.error;
  ASSERT_EQ(opened.sessions.size(), kStrategies.size());
  const auto stats = ui::sessionStats(opened.sessions);
  const auto bars = ui::figureBars(opened.sessions, stats);
  ASSERT_EQ(bars.size(), 5u);  // step time, throughput, sent, time in collectives, overlap
  const auto figures = stats::comparisonFigures(ui::comparedRuns(opened.sessions, stats));
  for (size_t i = 0; i < kStrategies.size(); ++i) {
    SCOPED_TRACE(kStrategies[i]);
    EXPECT_EQ(bars[0].labels[i], table["step time (slowest rank)"][i]);
    EXPECT_EQ(bars[1].labels[i], table["samples/s (all ranks)"][i]);
    const std::string ratio = table["ratio to ddp"][i];
    ASSERT_NE(ratio, "-") << "every run has ddp's at four ranks to compare with";
    EXPECT_EQ(bars[2].labels[i], table["sent per step (rank 0, ring)"][i] + " (" + ratio + " ddp)");
    EXPECT_EQ(trace::formatDuration(1e9 * figures[i].exposedCommSeconds), table["exposed comm per step"][i])
        << "the app's table row";
    EXPECT_EQ(bars[4].labels[i], table["comm/compute overlap"][i]);
  }
  EXPECT_EQ(table["ratio to ddp"][0], "1.00x") << "ddp against itself";
}

}  // namespace
}  // namespace shardscope::app
