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
  e.uncertaintyNs = bound;
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
  sink.rankEvents(
      1, {memoryAt(1, kAhead + 500, 64), clockOffset(1, kAhead + 1'000, 1'000, 80), memoryAt(1, kAhead + 2'000, -64)});
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
  EXPECT_EQ(s.config.strategy, config::StrategyKind::FullShard) << "rank 0's options";
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
  EXPECT_EQ(store.sessions()[0].error,
            "the collector could not listen on 127.0.0.1:1 (another process may hold the "
            "port: choose another); the terminal says why");
}

// A long job in Listen mode stays within --window-events: its oldest steps fold, as a long run's
// do in the app, every step still counted, and the session says where every step is kept.
TEST(LiveJob, ALongJobFoldsItsOldestStepsWithinItsBudget) {
  constexpr size_t kBudget = 400;  // events over the job's ranks
  ui::SessionStore store;
  LiveJobSink sink(store, "127.0.0.1:29700", kBudget, "/data/job");
  sink.rankJoined(0, 1, R"({"strategy": "ddp"})", "127.0.0.1");
  sink.rankEvents(0, {clockOffset(0, 0, 0, 0)});
  constexpr int kSteps = 200;
  for (int s = 0; s < kSteps; ++s) {
    std::vector<trace::Event> events;
    const int64_t t0 = 1'000'000LL * (s + 1);  // a step a millisecond
    for (int k = 0; k < 5; ++k) {
      events.push_back(memoryAt(0, t0 + 100 * k, 64));
      events.push_back(memoryAt(0, t0 + 100 * k + 50, -64));
    }
    trace::Event step;
    step.kind = trace::EventKind::StepEnd;
    step.rank = 0;
    step.step = s;
    step.beginNs = t0;
    step.endNs = t0 + 900;
    events.push_back(step);
    sink.rankEvents(0, events);
  }
  sink.rankEnded(0, true, "finished");
  sink.finish(0);

  auto lock = store.lock();
  const auto& s = store.sessions()[0];
  const auto& rank = s.recording.rank(0);
  EXPECT_GT(rank.folded.steps, 0) << "2,200 events against a budget of 400";
  EXPECT_EQ(rank.folded.steps + static_cast<int>(rank.steps.size()), kSteps) << "every step counted";
  EXPECT_LE(s.recording.detailEvents(0), kBudget + kBudget / 8) << "held within the budget (and a step's worth)";
  EXPECT_EQ(s.everyStepIn, "/data/job");
}

}  // namespace
}  // namespace shardscope::app
