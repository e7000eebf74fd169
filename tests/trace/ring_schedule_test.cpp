// The ring schedule the app animates: run on real numbers, it must compute what the collective
// computes, with each rank sending one chunk to its right neighbour per step and the closed-form
// bytes per rank (all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size).
#include <gtest/gtest.h>

#include "trace/ring_schedule.h"

namespace shardscope::trace {
namespace {

// data[rank][chunk]: rank r's own value for chunk c, distinct for every (r, c).
std::vector<std::vector<double>> ownValues(int n) {
  std::vector<std::vector<double>> data(n, std::vector<double>(n));
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) data[r][c] = 1.0 + r * 100.0 + c * 7.0;
  }
  return data;
}

// Executes the schedule: every transfer of a step reads what its sender held before the step.
std::vector<std::vector<double>> execute(const RingSchedule& s, std::vector<std::vector<double>> data) {
  for (const auto& step : s.steps) {
    auto before = data;
    for (const auto& t : step) {
      data[t.to][t.chunk] = t.reduce ? before[t.to][t.chunk] + before[t.from][t.chunk] : before[t.from][t.chunk];
    }
  }
  return data;
}

double sumOverRanks(const std::vector<std::vector<double>>& data, int chunk) {
  double total = 0;
  for (const auto& rank : data) total += rank[chunk];
  return total;
}

void expectEveryRankSendsOnceToItsRightNeighbour(const RingSchedule& s) {
  for (const auto& step : s.steps) {
    ASSERT_EQ(static_cast<int>(step.size()), s.ranks);
    std::vector<int> sends(s.ranks, 0);
    for (const auto& t : step) {
      EXPECT_EQ(t.to, (t.from + 1) % s.ranks);
      ++sends[t.from];
    }
    for (int count : sends) EXPECT_EQ(count, 1);
  }
}

class RingSizes : public ::testing::TestWithParam<int> {};

TEST_P(RingSizes, AllReduceLeavesTheSumOfEveryChunkOnEveryRank) {
  const int n = GetParam();
  const auto s = ringSchedule(CollectiveOp::AllReduce, n, 1200 * n);
  ASSERT_EQ(static_cast<int>(s.steps.size()), 2 * (n - 1));
  EXPECT_EQ(s.reduceSteps, n - 1);
  expectEveryRankSendsOnceToItsRightNeighbour(s);
  const auto start = ownValues(n);
  const auto end = execute(s, start);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) EXPECT_DOUBLE_EQ(end[r][c], sumOverRanks(start, c)) << "rank " << r << " chunk " << c;
  }
  EXPECT_EQ(s.chunkBytes, 1200);
  EXPECT_EQ(s.bytesSentPerRank(), 2 * (n - 1) * 1200);  // 2(N-1)/N x size
  const auto held = ringHoldingsAfter(s, static_cast<int>(s.steps.size()));
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) EXPECT_EQ(held[r][c], n);
  }
}

TEST_P(RingSizes, ReduceScatterLeavesRankRTheSumOfChunkR) {
  const int n = GetParam();
  const auto s = ringSchedule(CollectiveOp::ReduceScatter, n, 640 * n);
  ASSERT_EQ(static_cast<int>(s.steps.size()), n - 1);
  expectEveryRankSendsOnceToItsRightNeighbour(s);
  const auto start = ownValues(n);
  const auto end = execute(s, start);
  for (int r = 0; r < n; ++r) EXPECT_DOUBLE_EQ(end[r][r], sumOverRanks(start, r)) << "rank " << r;
  EXPECT_EQ(s.bytesSentPerRank(), (n - 1) * 640);  // (N-1)/N x size
  const auto held = ringHoldingsAfter(s, n - 1);
  for (int r = 0; r < n; ++r) EXPECT_EQ(held[r][r], n);
}

TEST_P(RingSizes, AllGatherGivesEveryRankEveryRanksChunk) {
  const int n = GetParam();
  const auto s = ringSchedule(CollectiveOp::AllGather, n, 512 * n);
  ASSERT_EQ(static_cast<int>(s.steps.size()), n - 1);
  expectEveryRankSendsOnceToItsRightNeighbour(s);
  // Rank r starts with its own chunk only.
  std::vector<std::vector<double>> start(n, std::vector<double>(n, 0.0));
  for (int r = 0; r < n; ++r) start[r][r] = 10.0 + r;
  const auto end = execute(s, start);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) EXPECT_DOUBLE_EQ(end[r][c], 10.0 + c) << "rank " << r << " chunk " << c;
  }
  EXPECT_EQ(s.bytesSentPerRank(), (n - 1) * 512);
  const auto before = ringHoldingsAfter(s, 0);
  EXPECT_EQ(before[0][0], 1);
  EXPECT_EQ(before[0][1], 0);
}

INSTANTIATE_TEST_SUITE_P(Worlds, RingSizes, ::testing::Values(2, 3, 4, 5, 8));

TEST(RingSchedule, HalfwayThroughAnAllReduceChunksArePartlyReduced) {
  const auto s = ringSchedule(CollectiveOp::AllReduce, 4, 4096);
  const auto held = ringHoldingsAfter(s, 1);
  int partial = 0;
  for (const auto& rank : held) {
    for (int count : rank) partial += count == 2;
  }
  EXPECT_EQ(partial, 4);  // after one step each rank has added one neighbour's chunk to its own
}

TEST(RingSchedule, NothingMovesForOneRankABroadcastOrABarrier) {
  EXPECT_FALSE(ringSchedule(CollectiveOp::AllReduce, 1, 1024).animatable());
  EXPECT_FALSE(ringSchedule(CollectiveOp::Broadcast, 4, 1024).animatable());
  EXPECT_FALSE(ringSchedule(CollectiveOp::Barrier, 4, 0).animatable());
}

TEST(RingSchedule, ChunksRoundUpWhenTheSizeDoesNotDivide) {
  const auto s = ringSchedule(CollectiveOp::AllGather, 3, 100);
  EXPECT_EQ(s.chunkBytes, 34);
  EXPECT_EQ(s.bytesSentPerRank(), 68);
}

// The closed forms the ZeRO paper's comparison rests on, at the world sizes a class uses.
TEST(RingTraffic, ClosedFormsPerRankAtWorldTwoThreeFour) {
  const int64_t size = 1'200'000;  // divisible by 2, 3 and 4
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(n);
    const auto ar = ringTrafficPerRank(CollectiveOp::AllReduce, n, size);
    EXPECT_EQ(ar.sentBytes, 2 * (n - 1) * size / n);
    EXPECT_EQ(ar.receivedBytes, ar.sentBytes);
    for (auto op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
      const auto t = ringTrafficPerRank(op, n, size);
      EXPECT_EQ(t.sentBytes, (n - 1) * size / n);
      EXPECT_EQ(t.receivedBytes, t.sentBytes);
      // The animated schedule sends exactly that many chunks.
      EXPECT_EQ(ringSchedule(op, n, size).bytesSentPerRank(), t.sentBytes);
    }
    EXPECT_EQ(ringSchedule(CollectiveOp::AllReduce, n, size).bytesSentPerRank(), ar.sentBytes);
  }
  // Reduce-scatter then all-gather moves exactly what one all-reduce moves: ZeRO-2 = DDP.
  for (int n : {2, 3, 4, 8}) {
    EXPECT_EQ(ringTrafficPerRank(CollectiveOp::ReduceScatter, n, size).sentBytes +
                  ringTrafficPerRank(CollectiveOp::AllGather, n, size).sentBytes,
              ringTrafficPerRank(CollectiveOp::AllReduce, n, size).sentBytes);
  }
}

TEST(RingTraffic, NothingMovesAloneOrAtABarrier) {
  EXPECT_EQ(ringTrafficPerRank(CollectiveOp::AllReduce, 1, 1000).sentBytes, 0);
  EXPECT_EQ(ringTrafficPerRank(CollectiveOp::Barrier, 4, 0).sentBytes, 0);
  // Not divisible: rounded to the nearest byte, never more than the size x the factor + 1/2.
  EXPECT_EQ(ringTrafficPerRank(CollectiveOp::AllReduce, 3, 1000).sentBytes, 1333);
  EXPECT_EQ(ringTrafficPerRank(CollectiveOp::AllGather, 3, 1000).sentBytes, 667);
}

// What a PyTorch job's other collectives move: an all-to-all what leaves of its input and arrives
// of its output, (N-1)/N of each with even splits, exactly its input and output less its own part
// where that is recorded; a send its message out and nothing in, a recv the reverse, at any group
// size; none of them animates as a ring. Their bus bandwidth: all-to-all (N-1)/N, a send's 1.
TEST(RingTraffic, AllToAllSendAndRecvMoveWhatLeavesAndArrives) {
  const auto even = ringTrafficPerRank(CollectiveOp::AllToAll, 4, 1000);
  EXPECT_EQ(even.sentBytes, 750);
  EXPECT_EQ(even.receivedBytes, 750);
  Event a2a;
  a2a.kind = EventKind::Collective;
  a2a.op = static_cast<uint8_t>(CollectiveOp::AllToAll);
  a2a.worldSize = 4;
  a2a.bytes = 1000;
  a2a.bytesOut = 1400;
  a2a.ownPartBytes = -1;
  EXPECT_EQ(collectiveTraffic(a2a).sentBytes, 750) << "even splits taken: 3/4 of its input";
  EXPECT_EQ(collectiveTraffic(a2a).receivedBytes, 1050) << "and 3/4 of its output";
  a2a.ownPartBytes = 100;
  EXPECT_EQ(collectiveTraffic(a2a).sentBytes, 900) << "all but the 100 bytes it keeps";
  EXPECT_EQ(collectiveTraffic(a2a).receivedBytes, 1300);
  a2a.ownPartBytes = 0;
  EXPECT_EQ(collectiveTraffic(a2a).sentBytes, 1000) << "a rank that keeps nothing sends it all";
  for (int n : {1, 2, 8}) {
    SCOPED_TRACE(n);
    const auto send = ringTrafficPerRank(CollectiveOp::Send, n, 640);
    const auto recv = ringTrafficPerRank(CollectiveOp::Recv, n, 640);
    EXPECT_EQ(send.sentBytes, 640);
    EXPECT_EQ(send.receivedBytes, 0);
    EXPECT_EQ(recv.sentBytes, 0);
    EXPECT_EQ(recv.receivedBytes, 640);
    EXPECT_EQ(busbwFactor(CollectiveOp::Send, n), 1.0);
  }
  EXPECT_DOUBLE_EQ(busbwFactor(CollectiveOp::AllToAll, 4), 0.75);
  for (auto op : {CollectiveOp::AllToAll, CollectiveOp::Send, CollectiveOp::Recv}) {
    EXPECT_FALSE(ringSchedule(op, 4, 1024).animatable()) << collectiveOpName(op);
  }
  EXPECT_STREQ(trafficBasis(CollectiveOp::AllReduce), "ring schedule");
  EXPECT_STREQ(trafficBasis(CollectiveOp::Recv), "one way");
}

}  // namespace
}  // namespace shardscope::trace
