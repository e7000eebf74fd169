#include "trace/run_recording.h"

#include <gtest/gtest.h>

#include <vector>

namespace shardscope::trace {
namespace {

Event memory(int64_t t, MemoryRole role, int64_t bytes, uint8_t from = kNoRole) {
  Event e;
  e.kind = EventKind::Memory;
  e.beginNs = t;
  e.role = static_cast<uint8_t>(role);
  e.bytes = bytes;
  e.fromRole = from;
  return e;
}

Event span(EventKind kind, uint8_t op, int64_t begin, int64_t end, int step = 0) {
  Event e;
  e.kind = kind;
  e.op = op;
  e.beginNs = begin;
  e.endNs = end;
  e.step = step;
  return e;
}

TEST(RunRecording, TracksBytesPerRolePeaksAndRetags) {
  RunRecording rec(1);
  rec.add(memory(1, MemoryRole::ParamShard, 100));
  rec.add(memory(2, MemoryRole::ParamGathered, 300));
  rec.add(memory(3, MemoryRole::Activation, 50));
  rec.add(memory(4, MemoryRole::GradFull, 50, static_cast<uint8_t>(MemoryRole::Activation)));
  rec.add(memory(5, MemoryRole::ParamGathered, -300));
  const auto& r = rec.rank(0);
  ASSERT_EQ(r.memory.size(), 5u);
  EXPECT_EQ(r.peakTotal, 450);
  EXPECT_EQ(r.peakByRole[static_cast<int>(MemoryRole::ParamGathered)], 300);
  EXPECT_EQ(r.memory.bytes(3)[static_cast<int>(MemoryRole::Activation)], 0);
  EXPECT_EQ(r.memory.bytes(3)[static_cast<int>(MemoryRole::GradFull)], 50);
  EXPECT_EQ(r.memoryTotals.value(4), 150);
  EXPECT_EQ(r.negativeBalance, 0);
  EXPECT_EQ(rec.originNs(), 1);
}

TEST(RunRecording, OverlapIsCommTimeCoveredByForwardOrBackward) {
  RunRecording rec(1);
  // compute [0,100) forward and [150,250) backward; comm [50,200): 50 + 50 of 150 covered.
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Forward), 0, 100));
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Backward), 150, 250));
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Step), 0, 300));  // ignored
  Event c = span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllReduce), 50, 200);
  c.bytes = 1000;
  rec.add(c);
  EXPECT_NEAR(rec.commFigures(0).overlapPercent, 100.0 * 100 / 150, 1e-9);
  auto totals = rec.collectiveTotals(0);
  EXPECT_EQ(totals[static_cast<int>(CollectiveOp::AllReduce)].count, 1);
  EXPECT_EQ(totals[static_cast<int>(CollectiveOp::AllReduce)].sizeBytes, 1000);
  EXPECT_EQ(rec.collectiveTotals(0, /*steps=*/0)[static_cast<int>(CollectiveOp::AllReduce)].count, 0);
}

// Exposed communication is the collective time no forward or backward span hides, cut per step;
// with the overlap it adds up to the collective time (HTA's comm/compute overlap, the other side).
TEST(RunRecording, ExposedCommIsCollectiveTimeNoComputeHides) {
  RunRecording rec(1);
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Forward), 0, 100));
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Optimizer), 100, 140));  // hides nothing
  rec.add(span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Backward), 150, 250));
  rec.add(span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllGather), 50, 200));
  rec.add(span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllReduce), 240, 400));
  Event step0 = span(EventKind::StepEnd, 0, 0, 300);
  Event step1 = span(EventKind::StepEnd, 0, 300, 500);
  step1.step = 1;
  rec.add(step0);
  rec.add(step1);
  const auto exposed = commExposureOf(rec.rank(0)).exposed;
  ASSERT_EQ(exposed.size(), 2u);
  EXPECT_EQ(exposed[0], (std::pair<int64_t, int64_t>{100, 150}));
  EXPECT_EQ(exposed[1], (std::pair<int64_t, int64_t>{250, 400}));
  const auto perStep = rec.commFigures(0).exposedCommSeconds;
  ASSERT_EQ(perStep.size(), 2u);
  EXPECT_NEAR(perStep[0], 100e-9, 1e-15);  // 100..150 and 250..300
  EXPECT_NEAR(perStep[1], 100e-9, 1e-15);  // 300..400
  const double comm = 150 + 160, hidden = comm - 200;
  EXPECT_NEAR(rec.commFigures(0).overlapPercent, 100.0 * hidden / comm, 1e-9);
  EXPECT_EQ(&rec.exposedCommCached(0), &rec.exposedCommCached(0));
  EXPECT_EQ(rec.exposedCommCached(0), exposed);
}

// A rank records a span when it ends, so an outer span (a whole backward) comes after the ones
// inside it: the recording holds spans in the order they began, and the figures do not depend on
// the order they arrived in.
TEST(RunRecording, SpansRecordedOutOfOrderGiveTheSameFigures) {
  const std::vector<Event> spans = {
      span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Forward), 0, 100),
      span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Backward), 150, 250),
      span(EventKind::Compute, static_cast<uint8_t>(ComputeKind::Backward), 160, 180),
      span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllGather), 50, 200),
      span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllGather), 60, 120),
      span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllReduce), 240, 400),
  };
  RunRecording inOrder(1), reversed(1);
  for (const auto& e : spans) inOrder.add(e);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) reversed.add(*it);
  const std::vector<std::pair<int64_t, int64_t>> expected = {{100, 150}, {250, 400}};
  EXPECT_EQ(commExposureOf(inOrder.rank(0)).exposed, expected);
  EXPECT_EQ(commExposureOf(reversed.rank(0)).exposed, expected);
  const double comm = 150 + 160, hidden = comm - 200;
  EXPECT_NEAR(reversed.commFigures(0).overlapPercent, 100.0 * hidden / comm, 1e-9);
  EXPECT_EQ(commExposureOf(reversed.rank(0)).commNs, 310);
  EXPECT_EQ(commExposureOf(reversed.rank(0)).hiddenNs, 110);
}

// The size counts the all-gather's output and the others' input; what the rank sends follows the
// ring schedule among the collective's own group.
TEST(RunRecording, CollectiveTotalsCountSizeAndRingTrafficPerGroup) {
  RunRecording rec(1);
  Event allReduce = span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllReduce), 0, 10);
  allReduce.bytes = allReduce.bytesOut = 1000;
  allReduce.worldSize = 4;
  Event allGather = span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllGather), 20, 30);
  allGather.bytes = 200;
  allGather.bytesOut = 800;
  allGather.worldSize = 4;
  Event pairAllGather = allGather;  // the same buffers among a group of two
  pairAllGather.worldSize = 2;
  pairAllGather.bytes = 400;
  for (const auto& e : {allReduce, allGather, pairAllGather}) rec.add(e);
  const auto totals = rec.collectiveTotals(0);
  const auto& ar = totals[static_cast<int>(CollectiveOp::AllReduce)];
  const auto& ag = totals[static_cast<int>(CollectiveOp::AllGather)];
  EXPECT_EQ(ar.sizeBytes, 1000);
  EXPECT_EQ(ar.sentBytes, 1500);  // 2 x 3/4 x 1000
  EXPECT_EQ(ar.receivedBytes, 1500);
  EXPECT_EQ(ag.count, 2);
  EXPECT_EQ(ag.sizeBytes, 1600);
  EXPECT_EQ(ag.sentBytes, 600 + 400);  // 3/4 x 800 + 1/2 x 800
  const auto all = allCollectives(totals);
  EXPECT_EQ(all.count, 3);
  EXPECT_EQ(all.sizeBytes, 2600);
  EXPECT_EQ(all.sentBytes, 2500);
  EXPECT_EQ(all.receivedBytes, 2500);
}

TEST(Bandwidth, FollowsNcclTestsFactors) {
  EXPECT_DOUBLE_EQ(busbwFactor(CollectiveOp::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbwFactor(CollectiveOp::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbwFactor(CollectiveOp::ReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbwFactor(CollectiveOp::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(algbwBytesPerSecond(2'000'000'000, 2.0), 1e9);
}

}  // namespace
}  // namespace shardscope::trace
