// The first point where ranks' collective logs disagree, on logs built here for each kind the
// analyzer names; tests/pytorch_flight_recorder.py checks it on real gloo jobs' dumps.
#include "stats/first_mismatch.h"

#include <gtest/gtest.h>

#include "stats/hang_summary.h"

namespace shardscope::stats {
namespace {

trace::LoggedCollective entry(int64_t seq, const std::string& op = "all_reduce", int64_t numel = 4,
                              const std::string& dtype = "Float") {
  trace::LoggedCollective c;
  c.group = "0";
  c.seq = seq;
  c.op = op;
  c.inputSizes = {{numel}};
  c.outputSizes = {{op == "all_gather" ? numel * 3 : numel}};
  c.inputDtypes = c.outputDtypes = {dtype};
  c.state = "scheduled";
  c.createdNs = 1000 * seq;
  return c;
}

// Three ranks that entered collectives 1..4 alike.
trace::CollectiveLogs agreeingLogs() {
  trace::CollectiveLogs logs;
  for (int r = 0; r < 3; ++r) {
    trace::RankCollectiveLog log{r, "fr-" + std::to_string(r), {}};
    for (int64_t seq = 1; seq <= 4; ++seq) log.entries.push_back(entry(seq));
    logs.ranks.push_back(log);
  }
  logs.groupRanks["0"] = {0, 1, 2};
  logs.groupDescriptions["0"] = "default_pg";
  logs.worldSize = 3;
  return logs;
}

TEST(FirstMismatch, NoneWhereEveryRankEnteredTheSame) {
  auto logs = agreeingLogs();
  EXPECT_FALSE(firstMismatch(logs));
  EXPECT_EQ(whereRanksStand(logs),
            "In group 0 (default_pg) every rank entered all_reduce #4 last, and 0 of 3 saw it end.");
  EXPECT_TRUE(hangSummaryJson(logs)["flight_recorder"]["first_mismatch"].is_null());
}

// A collective the backend failed on some ranks (their timeout passed) is no mismatch: its state is
// the backend's, alike on every rank. Where the ranks stand says who saw it fail; the summary too.
TEST(FirstMismatch, RanksThatSawTheLastCollectiveFailAreCountedApart) {
  auto logs = agreeingLogs();
  logs.ranks[0].entries.back().failed = true;
  logs.ranks[2].entries.back().failed = true;
  EXPECT_FALSE(firstMismatch(logs));
  EXPECT_EQ(whereRanksStand(logs),
            "In group 0 (default_pg) every rank entered all_reduce #4 last, and 0 of 3 saw it end, 2 saw it fail.");
  EXPECT_EQ(hangSummaryJson(logs)["ranks"][0]["last"]["failed"], true);
  EXPECT_EQ(hangSummaryJson(logs)["ranks"][1]["last"]["failed"], false);
}

TEST(FirstMismatch, ARankThatNeverEnteredIsMissing) {
  auto logs = agreeingLogs();
  logs.ranks[0].entries.push_back(entry(5));
  logs.ranks[2].entries.push_back(entry(5));
  const auto m = firstMismatch(logs);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, MismatchKind::MissingRank);
  EXPECT_EQ(m->seq, 5);
  EXPECT_EQ(m->ranks, std::vector<int>{1});
  EXPECT_EQ(m->agreed, (std::vector<int>{0, 2}));
  EXPECT_NE(
      m->explanation.find("rank 1 never entered all_reduce #5 of group 0 (default_pg), which ranks 0 and 2 entered "
                          "(its last there was all_reduce #4)"),
      std::string::npos)
      << m->explanation;
  const auto summary = hangSummaryJson(logs)["flight_recorder"]["first_mismatch"];
  EXPECT_EQ(summary["kind"], "missing_rank");
  EXPECT_EQ(summary["ranks"], nlohmann::json::array({1}));
}

TEST(FirstMismatch, TheOddRankOutIsNamedByOpSizeDtypeAndState) {
  struct Case {
    trace::LoggedCollective odd;
    MismatchKind kind;
  };
  auto stateOdd = entry(5);
  stateOdd.state = "started";
  for (const auto& [odd, kind] : std::vector<Case>{{entry(5, "all_gather"), MismatchKind::OpType},
                                                   {entry(5, "all_reduce", 3), MismatchKind::Size},
                                                   {entry(5, "all_reduce", 4, "Double"), MismatchKind::Dtype},
                                                   {stateOdd, MismatchKind::State}}) {
    auto logs = agreeingLogs();
    logs.ranks[0].entries.push_back(entry(5));
    logs.ranks[1].entries.push_back(entry(5));
    logs.ranks[2].entries.push_back(odd);
    const auto m = firstMismatch(logs);
    ASSERT_TRUE(m) << mismatchKindName(kind);
    EXPECT_EQ(m->kind, kind);
    EXPECT_EQ(m->ranks, std::vector<int>{2}) << "the one unlike the most";
    EXPECT_EQ(m->agreed, (std::vector<int>{0, 1}));
    EXPECT_EQ(m->seq, 5);
  }
}

TEST(FirstMismatch, ComparedFromWhatEveryRankStillHoldsAndTheEarliestGroupFirst) {
  auto logs = agreeingLogs();
  // Rank 1's buffer dropped 1 and 2, whose op differed there on rank 0: not comparable.
  logs.ranks[0].entries[0].op = "broadcast";
  logs.ranks[1].entries.erase(logs.ranks[1].entries.begin(), logs.ranks[1].entries.begin() + 2);
  EXPECT_FALSE(firstMismatch(logs));
  // A sub-group {0, 2} whose #1 disagrees, entered before group 0's #4 did.
  auto sub = entry(1);
  sub.group = "1";
  sub.createdNs = 3500;
  logs.groupRanks["1"] = {0, 2};
  logs.ranks[0].entries.push_back(sub);
  sub.inputSizes = sub.outputSizes = {{8}};
  logs.ranks[2].entries.push_back(sub);
  logs.ranks[0].entries[3].op = "all_gather";  // group 0's #4 differs too, but later (4000 ns)
  logs.ranks[2].entries[3].op = "all_gather";
  const auto m = firstMismatch(logs);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->group, "1");
  EXPECT_EQ(m->kind, MismatchKind::Size);
  EXPECT_EQ(m->ranks, std::vector<int>{2}) << "a tie: the lowest rank's kind is the usual one";
}

TEST(FirstMismatch, RowsAlignEachRanksEntryBySequenceNumber) {
  auto logs = agreeingLogs();
  logs.ranks[0].entries.push_back(entry(5));
  const auto rows = alignBySequence(logs, 2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].seq, 4);
  EXPECT_EQ(rows[1].seq, 5);
  ASSERT_EQ(rows[1].byRank.size(), 3u);
  EXPECT_NE(rows[1].byRank[0], nullptr);
  EXPECT_EQ(rows[1].byRank[1], nullptr);
  EXPECT_EQ(alignBySequence(logs).size(), 5u);
}

}  // namespace
}  // namespace shardscope::stats
