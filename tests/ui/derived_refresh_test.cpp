// A live run's figures are derived again only as often as their cost allows; a store that changed
// with no run recording gets them at once.
#include "ui/derived_refresh.h"

#include <gtest/gtest.h>

#include "ui/session_store.h"

namespace shardscope::ui {
namespace {

using Clock = DerivedRefresh::Clock;
using std::chrono::milliseconds;

TEST(DerivedRefresh, ALiveRunsFiguresFollowItAsOftenAsTheirCostAllows) {
  DerivedRefresh refresh;
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(refresh.due(1, true, t0)) << "never derived: now, live or not";
  refresh.derived(1, t0, t0 + milliseconds(100));  // a pass of 100 ms
  EXPECT_FALSE(refresh.due(1, true, t0 + milliseconds(5000))) << "the store did not change";
  EXPECT_DOUBLE_EQ(refresh.intervalSeconds(), 2.0) << "100 ms a pass: one every 2 s at most";
  EXPECT_FALSE(refresh.due(2, true, t0 + milliseconds(1000)));
  EXPECT_TRUE(refresh.stale(2)) << "the figures shown lag the recording";
  EXPECT_TRUE(refresh.due(2, true, t0 + milliseconds(2100)));
  EXPECT_TRUE(refresh.due(2, false, t0 + milliseconds(200))) << "no run recording: at once (a run that ended)";

  refresh.derived(2, t0 + milliseconds(3000), t0 + milliseconds(3001));  // a cheap pass
  EXPECT_FALSE(refresh.stale(2));
  EXPECT_DOUBLE_EQ(refresh.intervalSeconds(), DerivedRefresh::kMinIntervalSeconds);
  EXPECT_FALSE(refresh.due(3, true, t0 + milliseconds(3300)));
  EXPECT_TRUE(refresh.due(3, true, t0 + milliseconds(3600)));
}

// The step-through's groups follow a live run a quarter second apart at least; a run held at a
// step gate is not counted as recording for them, as the user's steps are what change it.
TEST(DerivedRefresh, GroupsFollowSoonerAndAGatedRunIsNotLiveForThem) {
  DerivedRefresh groups(0.25);
  const Clock::time_point t0 = Clock::now();
  groups.derived(1, t0, t0 + milliseconds(1));
  EXPECT_FALSE(groups.due(2, true, t0 + milliseconds(200)));
  EXPECT_TRUE(groups.due(2, true, t0 + milliseconds(300)));

  std::vector<Session> sessions(2);
  sessions[0].status = SessionStatus::Done;
  sessions[1].status = SessionStatus::Running;
  EXPECT_TRUE(anyRecording(sessions));
  sessions[1].gate.gated = true;
  EXPECT_TRUE(anyRecording(sessions)) << "gated runs count for the figures";
  EXPECT_FALSE(anyRecording(sessions, /*gatedToo=*/false));
  sessions[1].status = SessionStatus::Failed;
  EXPECT_FALSE(anyRecording(sessions));
}

}  // namespace
}  // namespace shardscope::ui
