// A long run in the app folds its oldest steps to stay within its budget of events: the timeline
// then fits the detail kept, not the whole run's empty start, and play and Home start there.
#include <gtest/gtest.h>

#include "tests/ui/app_driver.h"
#include "ui/key_codes.h"

namespace shardscope::ui {
namespace {

constexpr int kRanks = 2;
constexpr int kSteps = 40;

// Per rank and step: a memory sample, a forward span, an all-gather, an event group, its end.
void addStep(trace::RunRecording& rec, int rank, int step) {
  const int64_t begin = 1'000'000 + static_cast<int64_t>(step) * 1'000'000;
  trace::Event group;
  group.kind = trace::EventKind::Group;
  group.op = static_cast<uint8_t>(trace::GroupKind::Forward);
  group.rank = rank;
  group.step = step;
  group.beginNs = group.endNs = begin;
  group.text = "forward blocks.0";
  rec.add(group);
  trace::Event memory;
  memory.kind = trace::EventKind::Memory;
  memory.rank = rank;
  memory.beginNs = begin + 10'000;
  memory.role = static_cast<uint8_t>(trace::MemoryRole::Activation);
  memory.bytes = step % 2 == 0 ? 4096 : -4096;
  rec.add(memory);
  trace::Event forward;
  forward.kind = trace::EventKind::Compute;
  forward.op = static_cast<uint8_t>(trace::ComputeKind::Forward);
  forward.rank = rank;
  forward.step = step;
  forward.beginNs = begin + 20'000;
  forward.endNs = begin + 400'000;
  forward.text = "blocks.0";
  rec.add(forward);
  trace::Event gather = forward;
  gather.kind = trace::EventKind::Collective;
  gather.op = static_cast<uint8_t>(trace::CollectiveOp::AllGather);
  gather.issueNs = gather.beginNs = begin + 500'000;
  gather.endNs = begin + 700'000;
  gather.bytes = 1 << 20;
  gather.bytesOut = 2 << 20;
  gather.worldSize = kRanks;
  rec.add(gather);
  trace::Event end;
  end.kind = trace::EventKind::StepEnd;
  end.rank = rank;
  end.step = step;
  end.beginNs = begin;
  end.endNs = begin + 900'000;
  rec.add(end);
}

TEST(FoldedSession, TheTimelineFitsTheDetailKeptAndPlayStartsThere) {
  SessionStore store;
  AppState state;
  {
    Session s;
    s.title = "full_shard";
    s.status = SessionStatus::Done;
    s.recording.reset(kRanks);
    s.recording.keepDetailWithin(60, {});  // about 15 of the 40 steps, per rank
    for (int step = 0; step < kSteps; ++step) {
      for (int rank = 0; rank < kRanks; ++rank) addStep(s.recording, rank, step);
    }
    auto lock = store.lock();
    store.add(std::move(s));
  }
  const auto& rec = store.sessions()[0].recording;
  const int folded = rec.rank(0).folded.steps;
  ASSERT_GT(folded, 10) << "the run folded its older steps";
  ASSERT_EQ(rec.rank(1).folded.steps, folded) << "every rank folds through the same step";
  // The first thing kept is the first kept step's event group, at its begin.
  const double firstKept = static_cast<double>(rec.rank(0).groups.front().beginNs - rec.originNs());
  EXPECT_DOUBLE_EQ(firstKept, folded * 1e6);

  AppDriver app(store, state, 1920, 1080);
  app.draw();
  EXPECT_DOUBLE_EQ(state.detailStartNs, firstKept);
  EXPECT_DOUBLE_EQ(state.axis.beginNs, firstKept) << "the axis begins where the detail does, not at the run's start";
  EXPECT_GT(state.axis.endNs, static_cast<double>(kSteps) * 1e6 - 1e6) << "and reaches the run's end";

  app.pressKey(keys::kHome);
  EXPECT_TRUE(state.playhead.placed);
  EXPECT_DOUBLE_EQ(state.playhead.tNs, firstKept) << "Home goes to the first step kept";
}

// Nothing folded: the axis begins at the run's start, as it always did.
TEST(FoldedSession, AWholeRunFitsFromItsStart) {
  SessionStore store;
  AppState state;
  {
    Session s;
    s.status = SessionStatus::Done;
    s.recording.reset(kRanks);
    for (int step = 0; step < 5; ++step) {
      for (int rank = 0; rank < kRanks; ++rank) addStep(s.recording, rank, step);
    }
    auto lock = store.lock();
    store.add(std::move(s));
  }
  AppDriver app(store, state, 1920, 1080);
  app.draw();
  EXPECT_EQ(state.detailStartNs, 0);
  EXPECT_EQ(state.axis.beginNs, 0);
}

}  // namespace
}  // namespace shardscope::ui
