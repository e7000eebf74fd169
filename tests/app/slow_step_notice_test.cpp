// A step that runs long gets a line every interval naming each rank's last event; a step that ends
// in time gets none, and the last step's end silences it.
#include "app/slow_step_notice.h"

#include <gtest/gtest.h>

namespace shardscope::app {
namespace {

using namespace std::chrono_literals;

trace::Event forward(int rank, int step, const std::string& unit) {
  trace::Event e;
  e.kind = trace::EventKind::Compute;
  e.op = static_cast<uint8_t>(trace::ComputeKind::Forward);
  e.rank = rank;
  e.step = step;
  e.text = unit;
  return e;
}

TEST(SlowStepNotice, ALongStepSaysWhatEachRankDidLast) {
  const auto t0 = SlowStepNotice::Clock::now();
  SlowStepNotice notice(2, 3, t0, 10s);
  notice.event(forward(0, 0, "blocks.0"));
  EXPECT_EQ(notice.poll(t0 + 9s), "") << "not yet an interval";
  EXPECT_EQ(notice.poll(t0 + 10s), "step 1/3 has run 10 s: rank 0 forward blocks.0 ended in step 1, rank 1 starting");
  EXPECT_EQ(notice.poll(t0 + 15s), "") << "one line per interval";
  notice.event(forward(1, 0, "blocks.1"));
  EXPECT_EQ(notice.poll(t0 + 21s),
            "step 1/3 has run 21 s: rank 0 forward blocks.0 ended in step 1, rank 1 forward blocks.1 ended in step 1");

  notice.stepEnded(0, t0 + 22s);
  EXPECT_EQ(notice.poll(t0 + 30s), "") << "step 2 began 8 s ago";
  EXPECT_NE(notice.poll(t0 + 32s).find("step 2/3 has run 10 s"), std::string::npos);
  notice.stepEnded(2, t0 + 40s);
  EXPECT_EQ(notice.poll(t0 + 100s), "") << "after the last step nothing is running";
}

TEST(SlowStepNotice, ManyRanksAreCountedNotListed) {
  const auto t0 = SlowStepNotice::Clock::now();
  SlowStepNotice notice(8, 1, t0, 10s);
  const std::string line = notice.poll(t0 + 10s);
  EXPECT_NE(line.find("rank 3 starting, and 4 more ranks"), std::string::npos) << line;
}

}  // namespace
}  // namespace shardscope::app
