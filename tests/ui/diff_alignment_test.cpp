// A diff session's alignment on hand-made event groups: the same event group is found in the other
// run by its step, label and occurrence, the playhead stands as far into it (never past its end),
// and A is shifted so that the playhead's step starts where B's does.
#include "ui/diff_alignment.h"

#include <gtest/gtest.h>

#include "trace/names.h"

namespace shardscope::ui {
namespace {

EventGroupMark mark(double tNs, int step, const char* label) {
  EventGroupMark m;
  m.tNs = tNs;
  m.step = step;
  m.labelId = trace::internName(label);
  return m;
}

// Two steps of "step start, all-gather, forward, all-gather, forward", `stretch` times as long.
std::vector<EventGroupMark> run(double stretch, double offset) {
  std::vector<EventGroupMark> out;
  for (int step = 0; step < 2; ++step) {
    const double at = offset + step * 100 * stretch;
    out.push_back(mark(at, step, "step start"));
    out.push_back(mark(at + 10 * stretch, step, "all_gather"));
    out.push_back(mark(at + 20 * stretch, step, "forward"));
    out.push_back(mark(at + 30 * stretch, step, "all_gather"));
    out.push_back(mark(at + 40 * stretch, step, "forward"));
  }
  return out;
}

TEST(DiffAlignment, TheSameGroupIsFoundByStepLabelAndOccurrence) {
  const auto a = run(1, 0), b = run(2, 5);
  EXPECT_EQ(matchingGroup(a, 3, b), 3) << "the second all-gather of step 0";
  EXPECT_EQ(matchingGroup(a, 8, b), 8);
  auto missing = b;
  missing.erase(missing.begin() + 1);  // B lacks step 0's first all-gather
  EXPECT_EQ(matchingGroup(a, 3, missing), -1) << "only one all-gather in B's step 0: no second";
  EXPECT_EQ(matchingGroup(a, 1, missing), 2) << "A's first is found as B's only";
  EXPECT_EQ(matchingGroup(a, -1, b), -1);
  EXPECT_EQ(matchingGroup(a, 99, b), -1);
}

TEST(DiffAlignment, ThePlayheadStandsAtTheSameMomentAndAIsShiftedToBsStep) {
  const auto a = run(1, 0), b = run(2, 5);  // B's steps twice as long, starting 5 ns later
  // In B, 3 ns into step 1's second all-gather (at 5 + 200 + 60).
  const auto aligned = alignSessions({a, b}, 1, 268, true);
  EXPECT_DOUBLE_EQ(aligned.playheadNs[1], 268);
  EXPECT_DOUBLE_EQ(aligned.playheadNs[0], 130 + 3) << "A's step 1 all-gather #2 is at 130";
  EXPECT_EQ(aligned.step, 1);
  EXPECT_DOUBLE_EQ(aligned.shiftNs[0], 100 - 205) << "A's step 1 (at 100) drawn where B's (at 205) starts";
  EXPECT_DOUBLE_EQ(aligned.shiftNs[1], 0);
  // From A, 9 ns into step 0's first all-gather: B's lasts 20, so 9 in, not clamped.
  const auto fromA = alignSessions({a, b}, 0, 19, true);
  EXPECT_DOUBLE_EQ(fromA.playheadNs[1], 25 + 9);
  // Far past B's last group's start in A's time: B's playhead stops at no end (its last group).
  // Past the group's end in the other run: stopped at that end.
  auto shortB = b;
  shortB[2].tNs = shortB[1].tNs + 4;  // B's first all-gather of step 0 lasts 4 ns
  EXPECT_DOUBLE_EQ(alignSessions({a, shortB}, 0, 19, true).playheadNs[1], shortB[2].tNs);
}

// A group the other run lacks: the other's playhead is the moment drawn at the same place.
TEST(DiffAlignment, WithoutTheSameGroupThePlayheadIsWhereTheOtherIsDrawn) {
  const auto a = run(1, 0);
  auto b = run(2, 5);
  b[8].labelId = trace::internName("reshard");  // B's step 1 second all-gather, named otherwise
  const auto aligned = alignSessions({a, b}, 1, 268, true);
  ASSERT_EQ(aligned.step, 1);
  EXPECT_DOUBLE_EQ(aligned.playheadNs[0], 268 + aligned.shiftNs[0]) << "A drawn shiftNs earlier, under B's playhead";
  const auto fromA = alignSessions({b, a}, 0, 268, true);  // B as the first session: placed in it
  EXPECT_DOUBLE_EQ(fromA.playheadNs[1], 268 - fromA.shiftNs[0]);
}

TEST(DiffAlignment, OutsideADiffEverySessionSharesThePlayheadsTime) {
  const auto a = run(1, 0), b = run(2, 5);
  for (const auto& aligned : {alignSessions({a, b}, 1, 268, false), alignSessions({a, b}, 2, 268, true),
                              alignSessions({a, b}, 1, 1, true)}) {  // before B's first group
    EXPECT_DOUBLE_EQ(aligned.playheadNs[0], aligned.playheadNs[1]);
    EXPECT_DOUBLE_EQ(aligned.shiftNs[0], 0);
    EXPECT_EQ(aligned.step, -1);
  }
}

}  // namespace
}  // namespace shardscope::ui
