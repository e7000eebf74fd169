// A live run held at the step gate, driven through the real controller and real rank processes:
// each Step moves every rank exactly one event group on; a gated run trains exactly as an ungated
// one; pauses are recorded, kept out of compute spans and step times; Stop works while paused; and
// a rank that dies while the others wait at the gate is reported as any dead rank is.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>

#include "engine/launch/run_controller.h"
#include "tests/support/run_cli.h"
#include "tests/support/mode_of.h"

namespace shardscope::engine {
namespace {

using Clock = std::chrono::steady_clock;

config::RunConfig gatedConfig(const std::string& strategy, const std::string& gate) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = testing::modeOf<config::StrategyKind>(strategy);
  c.stepGate = testing::modeOf<config::StepGateMode>(gate);
  c.prefetch = 0;
  return c;
}

// Counts each rank's event groups as they reach the recording.
struct GroupCounter {
  std::map<int, int> released;  // rank -> Group events merged
  void count(const trace::Event& e) {
    if (e.kind == trace::EventKind::Group) ++released[e.rank];
  }
};

void expectEachStepMovesEveryRankOneGroup(const std::string& strategy) {
  const config::RunConfig config = gatedConfig(strategy, "group");
  GroupCounter groups;
  std::vector<std::string> waitedBefore;
  std::vector<std::map<int, int>> countsWhenWaiting;
  int stepsGiven = 0;
  bool allWaiting = false;
  constexpr int kSteps = 8;
  RunCallbacks callbacks;
  callbacks.onMerged = [&](const trace::Event& e) { groups.count(e); };
  callbacks.onGate = [&](const GateStatus& s) {
    allWaiting = !s.released && s.waiting == s.ranks;
    if (allWaiting) {
      waitedBefore.push_back(s.next);
      countsWhenWaiting.push_back(groups.released);
    }
  };
  // As a user does: Step only once every rank waits, then Continue.
  callbacks.gateCommand = [&] {
    if (!allWaiting) return GateCommand::None;
    allWaiting = false;
    return ++stepsGiven <= kSteps ? GateCommand::Step : GateCommand::Continue;
  };
  const RunResult gated = runTraining(config, SHARDSCOPE_BINARY, callbacks);
  ASSERT_TRUE(gated.ok) << gated.error;
  ASSERT_GE(countsWhenWaiting.size(), static_cast<size_t>(kSteps + 1));
  for (size_t k = 0; k < countsWhenWaiting.size(); ++k) {
    for (int r = 0; r < config.world; ++r) {
      // Before the k-th pause every rank has gone through exactly k groups: one per Step.
      EXPECT_EQ(countsWhenWaiting[k][r], static_cast<int>(k)) << strategy << ", pause " << k << ", rank " << r;
    }
  }
  // The ranks waited before the groups the recording then holds, in that order.
  const auto& recorded = gated.recording.rank(0).groups;
  ASSERT_GE(recorded.size(), waitedBefore.size());
  for (size_t k = 0; k < waitedBefore.size(); ++k) EXPECT_EQ(recorded[k].text(), waitedBefore[k]) << k;
  EXPECT_EQ(waitedBefore.front(), "step start");
  // The same training as without the gate.
  const RunResult free = runTraining(gatedConfig(strategy, "off"), SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(free.ok) << free.error;
  EXPECT_EQ(gated.losses, free.losses);
  // The ungated run went through the same groups, unpaused.
  ASSERT_EQ(free.recording.rank(1).groups.size(), gated.recording.rank(1).groups.size());
  for (const auto& g : free.recording.rank(1).groups) EXPECT_EQ(g.endNs, g.beginNs);
}

TEST(StepGate, EachStepMovesEveryRankExactlyOneEventGroupFullShard) {
  expectEachStepMovesEveryRankOneGroup("full_shard");
}

TEST(StepGate, EachStepMovesEveryRankExactlyOneEventGroupDdp) { expectEachStepMovesEveryRankOneGroup("ddp"); }

TEST(StepGate, FullShardGroupsFollowFsdpsHooks) {
  const RunResult run = runTraining(gatedConfig("full_shard", "off"), SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(run.ok) << run.error;
  std::vector<std::string> labels;
  for (const auto& g : run.recording.rank(0).groups) {
    if (g.step == 0) labels.push_back(g.text());
  }
  // prefetch 0: gather, compute, reshard unit by unit; the root stays gathered through forward.
  const std::vector<std::string> forward = {"step start",          "all_gather root",  "forward root",
                                            "all_gather blocks.0", "forward blocks.0", "reshard blocks.0",
                                            "all_gather blocks.1", "forward blocks.1", "reshard blocks.1"};
  ASSERT_GE(labels.size(), forward.size());
  EXPECT_EQ(std::vector<std::string>(labels.begin(), labels.begin() + forward.size()), forward);
  EXPECT_EQ(labels.back(), "optimizer step");
  auto position = [&](const std::string& label) {
    return std::find(labels.begin(), labels.end(), label) - labels.begin();
  };
  // Backward of blocks.2: gathered again first, its gradients reduce-scattered after it.
  EXPECT_LT(position("backward blocks.2"), position("reduce_scatter blocks.2"));
  EXPECT_LT(position("reduce_scatter blocks.2"), position("backward blocks.1"));
}

// DDP's bucket all-reduce is issued from a gradient hook inside backward: the pause before it
// falls inside a backward compute span, which must be split around it.
TEST(StepGate, APauseIsRecordedAndLeftOutOfSpansAndStepTimes) {
  const config::RunConfig config = gatedConfig("ddp", "group");
  Clock::time_point heldSince{};
  bool waiting = false, holding = false, held = false;
  RunCallbacks callbacks;
  callbacks.onGate = [&](const GateStatus& s) {
    waiting = !s.released && s.waiting == s.ranks;
    if (waiting && !held && s.step == 0 && s.next.rfind("all_reduce bucket", 0) == 0) {
      holding = true;
      heldSince = Clock::now();
    }
  };
  callbacks.gateCommand = [&] {
    if (!waiting) return GateCommand::None;
    if (holding) {  // hold the bucket's group for 400 ms, then let the run go
      if (Clock::now() - heldSince < std::chrono::milliseconds(400)) return GateCommand::None;
      holding = false;
      held = true;
      return GateCommand::Continue;
    }
    waiting = false;
    return GateCommand::Step;
  };
  const RunResult run = runTraining(config, SHARDSCOPE_BINARY, callbacks);
  ASSERT_TRUE(run.ok) << run.error;
  ASSERT_TRUE(held) << "the ranks never waited before a bucket's all-reduce";
  for (int r = 0; r < config.world; ++r) {
    const auto& t = run.recording.rank(r);
    const trace::GroupSpan* pause = nullptr;
    for (const auto& g : t.groups) {
      if (g.text().rfind("all_reduce bucket", 0) == 0 && g.step == 0) pause = &g;
    }
    ASSERT_NE(pause, nullptr);
    EXPECT_GE(pause->endNs - pause->beginNs, 350'000'000) << "rank " << r;
    EXPECT_EQ(pause->phase, static_cast<uint8_t>(trace::Phase::Backward));
    // The backward span it fell in ends where the pause begins and goes on where it ends.
    bool endsAtPause = false, resumesAfter = false;
    for (const auto& c : t.compute) {
      if (static_cast<trace::ComputeKind>(c.op) == trace::ComputeKind::Step) continue;
      EXPECT_FALSE(c.beginNs < pause->beginNs && c.endNs > pause->endNs)
          << "a compute span holds the pause: " << c.text();
      if (static_cast<trace::ComputeKind>(c.op) != trace::ComputeKind::Backward) continue;
      endsAtPause |= c.endNs == pause->beginNs;
      resumesAfter |= c.beginNs == pause->endNs;
    }
    EXPECT_TRUE(endsAtPause && resumesAfter) << "rank " << r << ": the backward span was not split at the pause";
    ASSERT_FALSE(t.steps.empty());
    EXPECT_GE(t.steps[0].pausedNs, 350'000'000);
    // Its time is its wall time less the pause, however long a busy machine made the step itself
    // (it had been held under 0.35 s, which step 0's gate round trips can pass on two busy cores).
    const auto& step0 = t.steps[0];
    EXPECT_NEAR(run.stepSeconds[r][0] * 1e9, static_cast<double>(step0.endNs - step0.beginNs - step0.pausedNs), 1e3)
        << "step 0 counted its pause";
    EXPECT_NEAR(run.recording.stepSeconds(r)[0], run.stepSeconds[r][0], 1e-9);
  }
}

// Waiting at the gate is free: with Gloo's timeout cut to 1 s and the stall timeout to 3 s, the
// ranks wait 4.5 s at a gate with the next unit's all-gather in flight (prefetch 1), and the run ends
// as an ungated one does: a rank paused at the gate still says it is alive, so it is not stalled.
TEST(StepGate, AWaitLongerThanTheCollectiveTimeoutTripsNothing) {
  ::setenv("SHARDSCOPE_GLOO_TIMEOUT_MS", "1000", 1);
  config::RunConfig config = gatedConfig("full_shard", "group");
  config.prefetch = 1;
  config.stallTimeoutS = 3;
  bool waiting = false, holding = false, held = false;
  Clock::time_point heldSince{};
  RunCallbacks callbacks;
  callbacks.onGate = [&](const GateStatus& s) {
    waiting = !s.released && s.waiting == s.ranks;
    // Before forward of blocks.0, its all-gather and the next one's are issued.
    if (waiting && !held && s.next == "forward blocks.0") {
      holding = true;
      heldSince = Clock::now();
    }
  };
  callbacks.gateCommand = [&] {
    if (!waiting) return GateCommand::None;
    if (holding) {
      if (Clock::now() - heldSince < std::chrono::milliseconds(4500)) return GateCommand::None;
      holding = false;
      held = true;
      return GateCommand::Continue;
    }
    waiting = false;
    return GateCommand::Step;
  };
  const RunResult gated = runTraining(config, SHARDSCOPE_BINARY, callbacks);
  config.stepGate = config::StepGateMode::Off;
  const RunResult free = runTraining(config, SHARDSCOPE_BINARY, {});
  ::unsetenv("SHARDSCOPE_GLOO_TIMEOUT_MS");
  ASSERT_TRUE(held) << "the ranks never waited before forward blocks.0";
  ASSERT_TRUE(gated.ok) << gated.error;
  ASSERT_TRUE(free.ok) << free.error;
  EXPECT_EQ(gated.losses, free.losses);
}

TEST(StepGate, StopWorksWhileTheRanksWait) {
  RunCallbacks callbacks;
  bool waiting = false;
  callbacks.onGate = [&](const GateStatus& s) { waiting = s.waiting == s.ranks && !s.released; };
  callbacks.gateCommand = [] { return GateCommand::None; };  // never released
  callbacks.shouldStop = [&] { return waiting; };
  const auto start = Clock::now();
  const RunResult run = runTraining(gatedConfig("full_shard", "step"), SHARDSCOPE_BINARY, callbacks);
  EXPECT_FALSE(run.ok);
  EXPECT_NE(run.error.find("stopped by the user"), std::string::npos) << run.error;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0);
}

TEST(StepGate, ARankThatDiesWhileTheOthersWaitIsReported) {
  // --step-gate step: step 0 released; rank 1 is killed at the start of step 1 while rank 0 waits.
  ::setenv("SHARDSCOPE_FAULT", "rank=1,step=1,mode=kill", 1);
  RunCallbacks callbacks;
  int released = 0;
  bool waiting = false;
  callbacks.onGate = [&](const GateStatus& s) { waiting = s.waiting == s.ranks && !s.released; };
  callbacks.gateCommand = [&] {
    if (!waiting || released > 0) return GateCommand::None;
    waiting = false;
    ++released;
    return GateCommand::Step;
  };
  const RunResult run = runTraining(gatedConfig("ddp", "step"), SHARDSCOPE_BINARY, callbacks);
  ::unsetenv("SHARDSCOPE_FAULT");
  EXPECT_FALSE(run.ok);
  EXPECT_NE(run.error.find("rank 1 died: killed by signal 9"), std::string::npos) << run.error;
  EXPECT_EQ(run.losses.size(), 1u);
}

TEST(StepGate, AWorkerWithoutAControllerRefusesTheGate) {
  auto cli = testing::runShardscope(
      {"worker", "--model", "mlp", "--world", "1", "--batch", "4", "--step-gate", "group"},
      {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1"});
  EXPECT_NE(cli.exitCode, 0);
  EXPECT_NE(cli.output.find("--step-gate group needs shardscope's controller"), std::string::npos) << cli.output;
}

}  // namespace
}  // namespace shardscope::engine
