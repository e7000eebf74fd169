// Step-through of a live run, as a user does it in the app: the window over the real engine and
// real rank processes, started with the step gate; every click on Step moves every rank exactly one
// event group on, the view shows where they wait, and Continue lets the run end with the same
// losses as an ungated run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "app/engine_control.h"
#include "tests/app/app_over_engine.h"
#include "engine/launch/run_controller.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"

namespace shardscope::app {
namespace {

class LiveStepThrough : public AppOverEngine {
 protected:
  ~LiveStepThrough() override { engine_.continueGate(); }

  // Frames until `done` holds of the first session.
  template <typename Done>
  bool drawUntilFirst(Done done, double seconds = 60) {
    return drawUntil([&](const std::vector<ui::Session>& s) { return !s.empty() && done(s[0]); }, seconds);
  }
  std::vector<size_t> groupsPerRank() {
    auto lock = store_.lock();
    const auto& rec = store_.sessions()[0].recording;
    std::vector<size_t> out;
    for (int r = 0; r < rec.ranks(); ++r) out.push_back(rec.rank(r).groups.size());
    return out;
  }
};

TEST_F(LiveStepThrough, EachClickOnStepMovesEveryRankOneEventGroup) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::FullShard;
  c.stepGate = config::StepGateMode::Group;
  state_.config = c;
  engine_.startRun(c);
  ASSERT_TRUE(drawUntilFirst([](const ui::Session& s) { return s.gate.allWaiting(); }))
      << "the ranks never reached the gate";
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
    ASSERT_TRUE(drawUntilFirst([&](const ui::Session& s) {
      if (!s.gate.allWaiting()) return false;
      for (int r = 0; r < s.recording.ranks(); ++r) {
        if (s.recording.rank(r).groups.size() == before[static_cast<size_t>(r)]) return false;
      }
      return true;
    })) << "click "
        << clicks;
    const auto after = groupsPerRank();
    for (size_t r = 0; r < after.size(); ++r) {
      EXPECT_EQ(after[r], before[r] + 1) << "click " << clicks << ", rank " << r;
    }
    auto lock = store_.lock();
    // The group they waited before is the one each rank has just gone through.
    EXPECT_EQ(store_.sessions()[0].recording.rank(1).groups.back().text(), waitingBefore);
  }
  draw();
  click("gate:continue");
  ASSERT_TRUE(drawUntilFirst([](const ui::Session& s) { return s.status == ui::SessionStatus::Done; }));
  std::vector<double> gatedLosses;
  {
    auto lock = store_.lock();
    gatedLosses = store_.sessions()[0].losses;
  }
  c.stepGate = config::StepGateMode::Off;
  const engine::RunResult free = engine::runTraining(c, SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(free.ok) << free.error;
  EXPECT_EQ(gatedLosses, free.losses);
}

// Listen mode from the sidebar: the collector starts on the port the panel names, a job launched
// by hand (torchrun's variables) streams to it, and the window draws it as one live session.
TEST_F(LiveStepThrough, ListenFromTheSidebarDrawsALaunchedJob) {
  const int port = testing::freeLoopbackPort();
  state_.listen.port = port;
  const std::string dir = testing::freshTempDir("listen_from_sidebar");
  std::snprintf(state_.listen.dir, sizeof state_.listen.dir, "%s", dir.c_str());
  draw();
  click("listen:header");
  click("listen");
  ASSERT_EQ(state_.listen.message, "");
  ASSERT_TRUE(engine_.busy()) << "listening";
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 3;
  for (const auto& r : testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + std::to_string(port)})) {
    ASSERT_EQ(r.exitCode, 0) << r.output;
  }
  ASSERT_TRUE(drawUntilFirst([&](const ui::Session& s) {
    return s.status == ui::SessionStatus::Done && s.recording.ranks() == 2 && s.recording.rank(1).steps.size() == 3;
  })) << "the job never showed as done";
  {
    auto lock = store_.lock();
    EXPECT_EQ(store_.sessions()[0].title, "ddp (a launched job, live)");
    EXPECT_EQ(store_.sessions()[0].losses.size(), 3u);
  }
  EXPECT_TRUE(std::ifstream(dir + "/rank-1.events").good()) << "the collector wrote the ranks' files";
  for (int i = 0; i < 100 && engine_.busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(engine_.busy()) << "the collector ended with the job";
  draw();
  click("listen");
  EXPECT_EQ(state_.listen.message, "") << "and the panel can listen again";
  engine_.stop();
}

// A port another process holds: the panel says so (the collector cannot listen), nothing hangs.
TEST_F(LiveStepThrough, ListenOnABadPortSaysWhy) {
  state_.listen.port = 70000;
  draw();
  click("listen:header");
  click("listen");
  EXPECT_EQ(state_.listen.message, "port 70000 is not a port: give one from 1 to 65535");
  EXPECT_FALSE(engine_.busy());
}

}  // namespace
}  // namespace shardscope::app
