// A live run's event-group marks brought up to date by adding only the new groups' marks, checked
// against making them all again, as groups arrive rank by rank (ranks ahead of others, a paused
// group sent after the next one) and as the window folds its older steps away.
#include <gtest/gtest.h>

#include <random>

#include "trace/run_recording.h"
#include "ui/playhead.h"

namespace shardscope::ui {
namespace {

trace::Event groupEvent(int rank, int64_t beginNs, int64_t endNs, int step, const std::string& label) {
  trace::Event e;
  e.kind = trace::EventKind::Group;
  e.rank = rank;
  e.beginNs = beginNs;
  e.endNs = endNs;
  e.step = step;
  e.op = static_cast<uint8_t>(trace::GroupKind::Forward);
  e.text = label;
  return e;
}

void expectSameMarks(const std::vector<EventGroupMark>& got, const std::vector<EventGroupMark>& want,
                     const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].tNs, want[k].tNs) << where << ", mark " << k;
    ASSERT_EQ(got[k].labelId, want[k].labelId) << where << ", mark " << k;
    ASSERT_EQ(got[k].step, want[k].step) << where << ", mark " << k;
  }
}

// Three ranks run 40 steps of 12 groups; each rank's events arrive in bursts of its own length (so
// ranks run ahead of each other), and now and then a group is held back behind the next one, as a
// paused group is sent after the group that follows it.
TEST(GroupMarks, AddingTheNewGroupsMarksGivesWhatMakingThemAllGives) {
  std::mt19937 rng(5);
  for (const int keepSteps : {0, 6}) {
    trace::RunRecording rec;
    rec.reset(3);
    if (keepSteps > 0) rec.keepLastSteps(keepSteps, [](int, trace::RankTimeline&&) {});
    std::vector<std::vector<trace::Event>> pending(3);
    for (int r = 0; r < 3; ++r) {
      for (int step = 0; step < 40; ++step) {
        for (int g = 0; g < 12; ++g) {
          const int64_t t = 1'000'000 + (step * 12 + g) * 1000 + r * 37 + static_cast<int64_t>(rng() % 20);
          pending[r].push_back(groupEvent(r, t, t + (g == 3 ? 400 : 0), step, "group " + std::to_string(g)));
          if (g == 3 && rng() % 3 == 0) std::swap(pending[r][pending[r].size() - 1], pending[r][pending[r].size() - 2]);
        }
        trace::Event end;
        end.kind = trace::EventKind::StepEnd;
        end.rank = r;
        end.step = step;
        end.beginNs = 1'000'000 + step * 12 * 1000;
        end.endNs = end.beginNs + 12 * 1000 - 1;
        pending[r].push_back(end);
      }
    }
    std::vector<size_t> next(3, 0);
    std::vector<EventGroupMark> marks;
    GroupMarksBasis basis;
    int extended = 0, updates = 0, acrossFolds = 0;
    while (next[0] < pending[0].size() || next[1] < pending[1].size() || next[2] < pending[2].size()) {
      const int r = static_cast<int>(rng() % 3);
      for (size_t burst = 1 + rng() % 30; burst > 0 && next[r] < pending[r].size(); --burst) {
        rec.add(pending[r][next[r]++]);
      }
      updateGroupMarks(rec, marks, basis);
      ++updates;
      extended += basis.extended;
      acrossFolds += basis.droppedMarks > 0;
      expectSameMarks(marks, eventGroupMarks(rec),
                      "keeping " + std::to_string(keepSteps) + " steps, update " + std::to_string(updates));
    }
    EXPECT_GT(extended, updates / 3) << "most updates only add marks";
    // Each update here follows one rank's burst, so a fold is always one rank's alone: the ranks
    // have then folded different numbers of groups, and all the marks are made again
    // (FoldedMarksAreDropped... has every rank fold between updates).
    if (keepSteps > 0) EXPECT_LT(extended, updates) << "a fold makes them all again";
    EXPECT_EQ(acrossFolds, 0);
  }
}

// A mark is kept from going before the one before it: a paused group ends after the next step's
// first group began. Once the paused group is folded away, the new first mark has its own time, as
// making the marks all again gives it.
TEST(GroupMarks, FoldedMarksAreDroppedAndTheNewFirstHasItsOwnTime) {
  trace::RunRecording rec;
  rec.reset(2);
  rec.keepLastSteps(2, [](int, trace::RankTimeline&&) {});
  std::vector<EventGroupMark> marks;
  GroupMarksBasis basis;
  int acrossFolds = 0;
  for (int step = 0; step < 8; ++step) {
    const int64_t base = 1'000'000 + step * 1000;
    for (int r = 0; r < 2; ++r) {
      rec.add(groupEvent(r, base + r, base + r, step, "g0"));
      rec.add(groupEvent(r, base + 300 + r, base + 1100 + r, step, "paused"));
    }
    updateGroupMarks(rec, marks, basis);
    expectSameMarks(marks, eventGroupMarks(rec), "step " + std::to_string(step) + "'s groups");
    for (int r = 0; r < 2; ++r) {
      trace::Event end;
      end.kind = trace::EventKind::StepEnd;
      end.rank = r;
      end.step = step;
      end.beginNs = base;
      end.endNs = base + 999;
      rec.add(end);
    }
    updateGroupMarks(rec, marks, basis);
    expectSameMarks(marks, eventGroupMarks(rec), "step " + std::to_string(step) + " ended");
    acrossFolds += basis.droppedMarks > 0;
  }
  EXPECT_GE(acrossFolds, 2) << "each fold's marks dropped, not all made again";
  ASSERT_FALSE(marks.empty());
  EXPECT_EQ(marks.front().tNs, marks.front().latestNs) << "the first mark has its own time";
  EXPECT_GT(marks[2].tNs, marks[2].latestNs) << "a later one is still kept after the paused group's end";
}

// A run's first collective (a broadcast before the first group) gives marks of its own, from the
// fallback; once groups arrive the marks are the groups', made again, not the fallback's extended.
TEST(GroupMarks, MarksFromACollectiveBeforeTheFirstGroupAreMadeAgainFromTheGroups) {
  trace::RunRecording rec;
  rec.reset(2);
  for (int r = 0; r < 2; ++r) {
    trace::Event broadcast;
    broadcast.kind = trace::EventKind::Collective;
    broadcast.rank = r;
    broadcast.beginNs = 1000 + r;
    broadcast.endNs = 2000;
    broadcast.text = "init";
    rec.add(broadcast);
  }
  std::vector<EventGroupMark> marks;
  GroupMarksBasis basis;
  updateGroupMarks(rec, marks, basis);
  ASSERT_EQ(marks.size(), 1u) << "the broadcast, as the fallback marks it";
  for (int r = 0; r < 2; ++r) {
    for (int g = 0; g < 3; ++g)
      rec.add(groupEvent(r, 3000 + g * 100 + r, 3000 + g * 100 + r, 0, "g" + std::to_string(g)));
  }
  updateGroupMarks(rec, marks, basis);
  EXPECT_FALSE(basis.extended);
  expectSameMarks(marks, eventGroupMarks(rec), "after the groups arrived");
  EXPECT_EQ(marks.size(), 3u);
}

// The window keeps a session's marks until it makes them again, a while after the session's
// recording was closed or replaced: the marks hold their labels (the recording's names, and the
// fallback's own), so they still read right while the ids the recording let go name other things.
TEST(GroupMarks, MarksKeepTheirLabelsAfterTheirRecordingIsGone) {
  std::vector<EventGroupMark> grouped, fallback;
  GroupMarksBasis groupedBasis, fallbackBasis;
  {
    trace::RunRecording groups(2), collectives(1);
    for (int r = 0; r < 2; ++r) {
      for (int g = 0; g < 3; ++g)
        groups.add(groupEvent(r, 1000 + g * 100 + r, 1000 + g * 100 + r, 0, "closed group " + std::to_string(g)));
    }
    trace::Event collective;
    collective.kind = trace::EventKind::Collective;
    collective.rank = 0;
    collective.beginNs = 1000;
    collective.endNs = 2000;
    collective.text = "closed unit";
    collectives.add(collective);
    updateGroupMarks(groups, grouped, groupedBasis);
    updateGroupMarks(collectives, fallback, fallbackBasis);
  }
  trace::RunRecording next(1);  // the next trace's names, in the ids let go
  for (int g = 0; g < 8; ++g) next.add(groupEvent(0, 5000 + g, 5000 + g, 0, "next trace's group " + std::to_string(g)));
  ASSERT_EQ(grouped.size(), 3u);
  EXPECT_EQ(grouped[2].label(), "closed group 2");
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(fallback[0].label(), "all_gather closed unit");
  grouped.clear();
  fallback.clear();
  groupedBasis = GroupMarksBasis{};
  fallbackBasis = GroupMarksBasis{};
  // Made again (here: dropped), the marks let the closed recording's names go.
  EXPECT_FALSE(trace::nameKept("closed group 2"));
  EXPECT_FALSE(trace::nameKept("all_gather closed unit"));
  EXPECT_TRUE(trace::nameKept("next trace's group 7"));
}

}  // namespace
}  // namespace shardscope::ui
