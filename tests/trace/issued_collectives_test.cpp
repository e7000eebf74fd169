// Each rank's last issued collectives: marked finished by the Collective with the same issue time,
// named by their group's members (a hybrid mesh's shard groups apart), and kept as a ring.
#include "trace/issued_collectives.h"

#include <gtest/gtest.h>

namespace shardscope::trace {
namespace {

Event issued(int rank, int64_t seq, ProcessGroup group, int groupSize, int64_t issueNs) {
  Event e;
  e.kind = EventKind::CollectiveIssued;
  e.rank = rank;
  e.sequence = seq;
  e.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  e.processGroup = static_cast<uint8_t>(group);
  e.worldSize = groupSize;
  e.issueNs = e.beginNs = issueNs;
  e.bytes = 100;
  e.bytesOut = 200;
  e.text = "blocks.0|all_reduce";
  return e;
}

TEST(IssuedCollectives, EndedOnesAreMarkedAndGroupsNamedByTheirMembers) {
  IssuedCollectives c(4);
  for (int r = 0; r < 4; ++r) c.add(issued(r, 1, ProcessGroup::Shard, 2, 1000 + r));
  Event ended = issued(2, 1, ProcessGroup::Shard, 2, 1002);
  ended.kind = EventKind::Collective;
  c.add(ended);
  const auto logs = c.logs();
  ASSERT_EQ(logs.ranks.size(), 4u);
  EXPECT_EQ(logs.ranks[0].entries[0].group, "shard [0, 1]");
  EXPECT_EQ(logs.ranks[2].entries[0].group, "shard [2, 3]");
  EXPECT_EQ(logs.groupRanks.at("shard [2, 3]"), (std::vector<int>{2, 3}));
  EXPECT_TRUE(logs.ranks[2].entries[0].finished);
  EXPECT_EQ(logs.ranks[2].entries[0].state, "completed");
  EXPECT_FALSE(logs.ranks[3].entries[0].finished);
  EXPECT_EQ(logs.ranks[3].entries[0].state, "issued");
  EXPECT_EQ(describeCollective(logs.ranks[0].entries[0]), "all_gather blocks.0 [100] bytes")
      << "the unit, no implementation";
}

// A collective its backend failed (its timeout passed, a peer went away) never ended: it is marked
// failed, not finished, its state as the backend left it.
TEST(IssuedCollectives, FailedOnesAreMarkedFailedNotEnded) {
  IssuedCollectives c(3);
  for (int r = 0; r < 2; ++r) c.add(issued(r, 1, ProcessGroup::World, 3, 1000 + r));
  Event failed = issued(0, 1, ProcessGroup::World, 3, 1000);
  failed.kind = EventKind::CollectiveFailed;
  failed.beginNs = 2'000'001'000;
  c.add(failed);
  c.add(issued(2, 1, ProcessGroup::World, 3, 1002));
  const auto logs = c.logs();
  const auto& zero = logs.ranks[0].entries[0];
  EXPECT_TRUE(zero.failed);
  EXPECT_FALSE(zero.finished);
  EXPECT_EQ(zero.state, "issued");
  EXPECT_FALSE(logs.ranks[1].entries[0].failed);
}

TEST(IssuedCollectives, OnlyTheLastAreKept) {
  IssuedCollectives c(1, 3);
  EXPECT_TRUE(c.empty());
  for (int64_t seq = 1; seq <= 5; ++seq) c.add(issued(0, seq, ProcessGroup::World, 1, seq));
  c.add(issued(7, 1, ProcessGroup::World, 1, 9));  // no such rank: ignored
  const auto logs = c.logs();
  ASSERT_EQ(logs.ranks[0].entries.size(), 3u);
  EXPECT_EQ(logs.ranks[0].entries.front().seq, 3);
  EXPECT_EQ(logs.ranks[0].entries.back().seq, 5);
}

}  // namespace
}  // namespace shardscope::trace
