// Step-through of a live run, as a user does it in the app: the window over the real engine and
// real rank processes, started with the step gate; every click on Step moves every rank exactly one
// event group on, the view shows where they wait, and Continue lets the run end with the same
// losses as an ungated run.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "app/engine_control.h"
#include "engine/run_controller.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"

namespace shardscope::app {
namespace {

using Clock = std::chrono::steady_clock;

class LiveStepThrough : public ::testing::Test {
 protected:
  LiveStepThrough() : engine_(store_, SHARDSCOPE_BINARY) {}
  ~LiveStepThrough() override { engine_.continueGate(); }

  void draw() { app_.draw(&engine_); }
  void click(const std::string& name) { app_.clickOn(name, &engine_); }
  // Frames until `done` holds (under the store's lock), as the window would draw them.
  template <typename Done>
  bool drawUntil(Done done, double seconds = 60) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      draw();
      {
        auto lock = store_.lock();
        if (!store_.sessions().empty() && done(store_.sessions()[0])) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::vector<size_t> groupsPerRank() {
    auto lock = store_.lock();
    const auto& rec = store_.sessions()[0].recording;
    std::vector<size_t> out;
    for (int r = 0; r < rec.ranks(); ++r) out.push_back(rec.rank(r).groups.size());
    return out;
  }

  ui::SessionStore store_;
  EngineSessionControl engine_;
  ui::AppState state_;
  ui::AppDriver app_{store_, state_, 1920, 1080};
};

TEST_F(LiveStepThrough, EachClickOnStepMovesEveryRankOneEventGroup) {
  RunConfig c = testing::tinyGptConfig();
  c.strategy = StrategyKind::FullShard;
  c.stepGate = StepGateMode::Group;
  state_.config = c;
  engine_.startRun(c);
  ASSERT_TRUE(drawUntil([](const ui::Session& s) { return s.gate.allWaiting(); })) << "the ranks never reached the gate";
  std::string waitingBefore;
  for (int clicks = 0; clicks < 6; ++clicks) {
    const auto before = groupsPerRank();
    {
      auto lock = store_.lock();
      waitingBefore = store_.sessions()[0].gate.next;
    }
    draw();
    ASSERT_NO_FATAL_FAILURE(click("gate:step"));
    // Released, then waiting again one group on.
    ASSERT_TRUE(drawUntil([&](const ui::Session& s) {
      if (!s.gate.allWaiting()) return false;
      for (int r = 0; r < s.recording.ranks(); ++r) {
        if (s.recording.rank(r).groups.size() == before[static_cast<size_t>(r)]) return false;
      }
      return true;
    })) << "click " << clicks;
    const auto after = groupsPerRank();
    for (size_t r = 0; r < after.size(); ++r) {
      EXPECT_EQ(after[r], before[r] + 1) << "click " << clicks << ", rank " << r;
    }
    auto lock = store_.lock();
    // The group they waited before is the one each rank has just gone through.
    EXPECT_EQ(store_.sessions()[0].recording.rank(1).groups.back().text, waitingBefore);
  }
  draw();
  click("gate:continue");
  ASSERT_TRUE(drawUntil([](const ui::Session& s) { return s.status == ui::SessionStatus::Done; }));
  std::vector<double> gatedLosses;
  {
    auto lock = store_.lock();
    gatedLosses = store_.sessions()[0].losses;
  }
  c.stepGate = StepGateMode::Off;
  const RunResult free = runTraining(c, SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(free.ok) << free.error;
  EXPECT_EQ(gatedLosses, free.losses);
}

}  // namespace
}  // namespace shardscope::app
