// The app's Listen mode fills one session from what the collector hands on: each rank's events on
// rank 0's clock (those sent before the rank's clock was measured held until it is), rank 0's
// options and losses, and how the ranks ended.
#include "app/live_job.h"

#include <gtest/gtest.h>

namespace shardscope::app {
namespace {

trace::Event memoryAt(int rank, int64_t t, int64_t bytes) {
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  e.role = static_cast<uint8_t>(trace::MemoryRole::Activation);
  e.bytes = bytes;
  return e;
}

trace::Event clockOffset(int rank, int64_t local, int64_t rank0, int64_t bound) {
  trace::Event e;
  e.kind = trace::EventKind::ClockOffset;
  e.rank = rank;
  e.beginNs = local;
  e.endNs = rank0;
  e.count = bound;
  e.text = "host" + std::to_string(rank);
  return e;
}

TEST(LiveJob, RanksArriveOnRankZerosClockAndTheSessionEndsAsTheyDid) {
  constexpr int64_t kAhead = 5'000'000'000;  // rank 1's host clock
  ui::SessionStore store;
  LiveJobSink sink(store, "127.0.0.1:29700");
  sink.rankJoined(1, 2, "", "10.0.0.2");
  sink.rankJoined(0, 2, R"({"strategy": "full_shard", "model": "gpt"})", "10.0.0.1");
  // Rank 1: a sample before its clock is known, the clock, a sample after; rank 0 alike.
  sink.rankEvents(1, {memoryAt(1, kAhead + 500, 64), clockOffset(1, kAhead + 1'000, 1'000, 80),
                      memoryAt(1, kAhead + 2'000, -64)});
  trace::Event step;
  step.kind = trace::EventKind::StepEnd;
  step.rank = 0;
  step.step = 0;
  step.loss = 2.5;
  step.beginNs = 400;
  step.endNs = 3'000;
  sink.rankEvents(0, {clockOffset(0, 900, 900, 0), memoryAt(0, 1'500, 32), step});
  sink.rankEnded(0, true, "finished");
  sink.rankEnded(1, false, "rank 1 went without finishing (killed, or its host or link lost)");
  sink.finish(1);

  auto lock = store.lock();
  ASSERT_EQ(store.sessions().size(), 1u);
  const auto& s = store.sessions()[0];
  EXPECT_EQ(s.config.strategy, StrategyKind::FullShard) << "rank 0's options";
  EXPECT_EQ(s.title, "full_shard (a launched job, live)");
  ASSERT_EQ(s.recording.ranks(), 2);
  const auto& shifted = s.recording.rank(1).memory;
  ASSERT_EQ(shifted.size(), 2u);
  EXPECT_EQ(shifted.time(0), 500) << "held until the clock came, then shifted with the rest";
  EXPECT_EQ(shifted.time(1), 2'000);
  EXPECT_EQ(s.recording.rank(0).memory.time(0), 1'500) << "rank 0's clock is the clock";
  EXPECT_EQ(s.recording.rank(0).steps.size(), 1u);
  EXPECT_EQ(s.losses, std::vector<double>{2.5});
  EXPECT_EQ(s.status, ui::SessionStatus::Failed);
  EXPECT_NE(s.error.find("rank 1 went without finishing"), std::string::npos) << s.error;
}

// A collector that could not listen (exit 2) is not said to have stopped early.
TEST(LiveJob, ACollectorThatCouldNotListenSaysSo) {
  ui::SessionStore store;
  LiveJobSink sink(store, "127.0.0.1:1");
  sink.finish(2);
  auto lock = store.lock();
  EXPECT_EQ(store.sessions()[0].status, ui::SessionStatus::Failed);
  EXPECT_EQ(store.sessions()[0].error, "the collector could not listen: the terminal says why");
}

}  // namespace
}  // namespace shardscope::app
