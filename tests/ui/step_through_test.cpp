// The app at a human pace, on a real recorded run (a 2-rank full_shard GPT written by the real
// binary and read back as `shardscope view` reads it): the playhead steps through the ranks'
// event groups, "who holds what" draws each rank's holdings per unit at the playhead, the ring
// animates the collective in flight, and a gated live run's Step and Continue reach the engine.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "trace/trace_reader.h"
#include "ui/app_window.h"
#include "ui/headless_frame.h"
#include "ui/ring_view.h"
#include "ui/step_through.h"

namespace shardscope::ui {
namespace {

class GateEngine : public EngineControl {
 public:
  void startRun(const config::RunConfig&) override {}
  void startCompare(const std::vector<config::RunConfig>&) override {}
  void stop() override {}
  void stepGate() override { ++steps; }
  void continueGate() override { ++continues; }
  bool busy() const override { return true; }
  std::string checkConfig(const config::RunConfig&) const override { return ""; }
  int steps = 0;
  int continues = 0;
};

// One real run for every test of this file.
const trace::LoadedTrace& recordedFullShard() {
  static const trace::LoadedTrace loaded = [] {
    config::RunConfig c = testing::tinyGptConfig();
    c.strategy = config::StrategyKind::FullShard;
    c.prefetch = 0;
    const std::string path = testing::freshTempDir("step_through_ui") + "/full_shard.json";
    const auto cli = testing::runShardscope(testing::runArgsOf(c, {"--trace", path}));
    EXPECT_EQ(cli.exitCode, 0) << cli.output;
    return trace::loadChromeTrace(path);
  }();
  return loaded;
}

class StepThrough : public ::testing::Test {
 protected:
  StepThrough() {
    const auto& loaded = recordedFullShard();
    EXPECT_TRUE(loaded.error.empty()) << loaded.error;
    Session s;
    s.title = "full_shard";
    s.config = loaded.config;
    s.recording = loaded.recording;
    s.status = SessionStatus::Done;
    s.device = "cpu / gloo";
    auto lock = store_.lock();
    store_.add(std::move(s));
  }

  void draw(EngineControl* engine = nullptr) { app_.draw(engine); }
  void clickOn(const std::string& name, EngineControl* engine = nullptr) { app_.clickOn(name, engine); }
  void openHoldings() {
    draw();
    draw();
    clickOn("tab:Who holds what");
  }
  const trace::RunRecording& rec() { return store_.sessions()[0].recording; }
  // Relative time of the middle of rank 0's first `kind` span of `unit` in step 1.
  double middleOf(trace::ComputeKind kind, const std::string& unit) {
    for (const auto& c : rec().rank(0).compute) {
      if (static_cast<trace::ComputeKind>(c.op) == kind && c.text() == unit && c.step == 1) {
        return (c.beginNs + c.endNs) / 2.0 - static_cast<double>(rec().originNs());
      }
    }
    ADD_FAILURE() << "no span of " << unit;
    return 0;
  }

  SessionStore store_;
  AppState state_;
  AppDriver app_{store_, state_, 1920, 1080};
};

TEST_F(StepThrough, EventGroupsLineUpAcrossRanksInTheRecordedOrder) {
  const auto marks = eventGroupMarks(rec());
  ASSERT_EQ(marks.size(), rec().rank(0).groups.size());
  ASSERT_EQ(marks.size(), rec().rank(1).groups.size());
  EXPECT_EQ(marks.front().label(), "step start");
  for (size_t k = 0; k < marks.size(); ++k) {
    const double latest = std::max(rec().rank(0).groups[k].beginNs, rec().rank(1).groups[k].beginNs) -
                          static_cast<double>(rec().originNs());
    EXPECT_GE(marks[k].tNs, latest - 1.0) << k;  // every rank has entered group k by then
    if (k > 0) EXPECT_GE(marks[k].tNs, marks[k - 1].tNs);
  }
}

TEST_F(StepThrough, ArrowButtonsMoveThePlayheadOneGroupAtATime) {
  draw();
  draw();
  clickOn("play:start");
  EXPECT_TRUE(state_.playhead.placed);
  EXPECT_EQ(state_.playhead.tNs, 0);
  const auto marks = eventGroupMarks(rec());
  std::vector<double> distinct;
  for (const auto& m : marks) {
    if (distinct.empty() || m.tNs > distinct.back() + 1.0) distinct.push_back(m.tNs);
  }
  ASSERT_GE(distinct.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    clickOn("play:forward");
    EXPECT_DOUBLE_EQ(state_.playhead.tNs, distinct[k]) << "after " << k + 1 << " steps";
  }
  clickOn("play:back");
  EXPECT_DOUBLE_EQ(state_.playhead.tNs, distinct[2]);
}

// --zoom FROM..TO: the timelines show that window of the run once it is drawn, each end a time or
// an event group as --at takes it; a window that is not one is refused by name.
TEST_F(StepThrough, ZoomShowsTheWindowItNames) {
  const auto marks = eventGroupMarks(rec());
  std::string error;
  const auto steps = resolveZoomWindow("step start@1..optimizer step@1", marks, error);
  ASSERT_TRUE(steps.has_value()) << error;
  EXPECT_DOUBLE_EQ(steps->first, *resolvePlayheadPosition("step start@1", marks, error));
  EXPECT_DOUBLE_EQ(steps->second, *resolvePlayheadPosition("optimizer step@1", marks, error));
  EXPECT_LT(steps->first, steps->second);
  const auto times = resolveZoomWindow("1ms..2.5ms", marks, error);
  ASSERT_TRUE(times.has_value()) << error;
  EXPECT_DOUBLE_EQ(times->first, 1e6);
  EXPECT_DOUBLE_EQ(times->second, 2.5e6);
  EXPECT_FALSE(resolveZoomWindow("2ms", marks, error));
  EXPECT_NE(error.find("is not FROM..TO"), std::string::npos) << error;
  EXPECT_FALSE(resolveZoomWindow("2ms..1ms", marks, error));
  EXPECT_NE(error.find("FROM is not before TO"), std::string::npos) << error;
  EXPECT_FALSE(resolveZoomWindow("1ms..lunch", marks, error));
  EXPECT_NE(error.find("--zoom's TO 'lunch' is neither a time"), std::string::npos) << error;
  // A step past the run's last is named as such (steps count from 0), not as a missing group.
  int last = 0;
  for (const auto& m : marks) last = std::max(last, m.step);
  const std::string past = "step start@" + std::to_string(last + 1);
  EXPECT_FALSE(resolveZoomWindow("step start@0.." + past, marks, error));
  EXPECT_NE(error.find("names step " + std::to_string(last + 1) + ", but this run's event groups are in steps 0 to " +
                       std::to_string(last)),
            std::string::npos)
      << error;

  state_.pendingZoom = "step start@1..optimizer step@1";
  draw();
  draw();
  EXPECT_DOUBLE_EQ(state_.axis.beginNs, steps->first);
  EXPECT_DOUBLE_EQ(state_.axis.endNs, steps->second);
  EXPECT_TRUE(state_.atError.empty()) << state_.atError;
  draw();
  EXPECT_DOUBLE_EQ(state_.axis.endNs, steps->second) << "kept, not fitted to the run again";
}

TEST_F(StepThrough, PlayingMovesAtAFractionOfRealTime) {
  Playhead p;
  p.placed = true;
  p.playing = true;
  p.speed = 0.01;
  advancePlayhead(p, 0.5, 1e9);  // half a second of wall time at 1/100 speed: 5 ms of the run
  EXPECT_NEAR(p.tNs, 5e6, 1.0);
  advancePlayhead(p, 1000, 1e9);
  EXPECT_EQ(p.tNs, 1e9);
  EXPECT_FALSE(p.playing) << "stops at the end";
}

TEST_F(StepThrough, WhoHoldsWhatMidBackwardDrawsEveryRankAndUnit) {
  openHoldings();
  state_.playhead.placed = true;
  state_.playhead.tNs = middleOf(trace::ComputeKind::Backward, "blocks.1");
  draw();
  const int units = static_cast<int>(rec().recordedUnits().size());
  EXPECT_EQ(units, 4);  // root and three blocks
  EXPECT_EQ(state_.lastHoldings.cells, 2 * units);
  EXPECT_EQ(state_.lastHoldings.filledCells, 2 * units) << "every rank holds a shard of every unit";
  EXPECT_GE(state_.lastHoldings.computingCells, 1) << "rank 0 computes blocks.1 there";
  // The gathered unit adds its whole size: more is drawn than between two units' computations.
  const int64_t midBackward = state_.lastHoldings.bytesShown;
  state_.playhead.tNs = middleOf(trace::ComputeKind::Optimizer, "");
  draw();
  EXPECT_NE(state_.lastHoldings.bytesShown, midBackward);
}

TEST_F(StepThrough, AClickedCollectiveIsAnimatedAsTheRing) {
  openHoldings();
  const trace::CollectiveSpan* rs = nullptr;
  for (const auto& c : rec().rank(0).collectives) {
    if (static_cast<trace::CollectiveOp>(c.op) == trace::CollectiveOp::ReduceScatter && c.step == 1) {
      rs = &c;
      break;
    }
  }
  ASSERT_NE(rs, nullptr);
  // What a click on its block selects (timeline_view.cpp).
  state_.selection = CollectiveSelection{true, rs->op, rs->step, rs->text(), rs->phase, rs->microBatch};
  state_.playhead.placed = true;
  state_.playhead.tNs = (rs->beginNs + rs->endNs) / 2.0 - static_cast<double>(rec().originNs());
  draw();
  ASSERT_TRUE(state_.ringShown);
  EXPECT_EQ(state_.ringCollective, "reduce_scatter " + trace::collectiveUnit(*rs) + ", step 1");
  EXPECT_EQ(state_.lastRing.steps, 1);           // N - 1 at two ranks
  EXPECT_EQ(state_.lastRing.stepsDone, 0);       // the playhead is halfway through its only step
  EXPECT_EQ(state_.lastRing.transfersDrawn, 2);  // both ranks send during it
  EXPECT_EQ(state_.lastRing.bytesSentPerRank, (trace::collectiveSizeBytes(*rs) + 1) / 2);
}

TEST_F(StepThrough, TheCollectiveAloneInFlightAtThePlayheadIsAnimated) {
  openHoldings();
  const auto& spans = rec().rank(0).collectives;
  const trace::CollectiveSpan* alone = nullptr;
  for (size_t i = 0; i < spans.size() && !alone; ++i) {
    const auto& c = spans[i];
    const int64_t mid = (c.beginNs + c.endNs) / 2;
    if (c.step != 1 || static_cast<trace::CollectiveOp>(c.op) == trace::CollectiveOp::Barrier) continue;
    bool overlapped = false;
    for (size_t j = 0; j < spans.size(); ++j) overlapped |= j != i && spans[j].beginNs <= mid && spans[j].endNs >= mid;
    if (!overlapped) alone = &c;
  }
  ASSERT_NE(alone, nullptr) << "every collective of step 1 overlaps another";
  state_.playhead.placed = true;
  state_.playhead.tNs = (alone->beginNs + alone->endNs) / 2.0 - static_cast<double>(rec().originNs());
  draw();
  ASSERT_TRUE(state_.ringShown);
  EXPECT_EQ(state_.ringCollective, std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(alone->op))) +
                                       " " + trace::collectiveUnit(*alone) + ", step 1");
  // Nothing in flight and no collective group at the playhead: the grid alone.
  state_.playhead.tNs = 0;
  draw();
  EXPECT_FALSE(state_.ringShown);
}

TEST_F(StepThrough, StepAndContinueOfAGatedRunReachTheEngine) {
  GateEngine engine;
  {
    auto lock = store_.lock();
    auto& s = store_.sessions()[0];
    s.status = SessionStatus::Running;
    s.gate = SessionGate{true, 2, 2, "all_gather blocks.1", 1};
  }
  draw(&engine);
  draw(&engine);
  clickOn("gate:step", &engine);
  EXPECT_EQ(engine.steps, 1);
  EXPECT_FALSE(state_.playhead.placed) << "the playhead follows the ranks";
  clickOn("play:forward", &engine);  // at the live edge of a gated run: the same as Step
  EXPECT_EQ(engine.steps, 2);
  clickOn("gate:continue", &engine);
  EXPECT_EQ(engine.continues, 1);
}

// A ring of 64 ranks: each rank one gauge instead of a row of 64 chunks (which overlapped its
// neighbours), every transfer of the step in flight still drawn, at a bounded cost.
TEST(RingView, SixtyFourRanksDrawOneGaugeEachAndEveryTransfer) {
  trace::CollectiveSpan c;
  c.op = static_cast<uint8_t>(trace::CollectiveOp::AllGather);
  c.worldSize = 64;
  c.bytes = 1024;
  c.bytesOut = 64 * 1024;
  c.name = trace::internName("blocks.0");
  auto draw = [&](int ranks, RingFrameStats& stats, double progress = 10.5) {
    c.worldSize = ranks;
    c.bytesOut = ranks * 1024;
    HeadlessImGui imgui(1200, 900);
    return imgui.frame([&] {
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(ImVec2(1200, 900));
      ImGui::Begin("ring");
      drawRingAnimation(c, /*rank=*/0, ranks, /*tensorRanks=*/1, "cpu / gloo", progress, "a test", 1100, 700, &stats);
      ImGui::End();
    });
  };
  RingFrameStats wide, small, done, scattered;
  const int wideVertices = draw(64, wide);
  EXPECT_EQ(wide.steps, 63);
  EXPECT_EQ(wide.stepsDone, 10);
  EXPECT_EQ(wide.transfersDrawn, 64) << "every rank sends to its neighbour in every step";
  EXPECT_NEAR(wide.meanProgress, 11.0 / 64, 1e-9) << "after 10 steps each rank holds 11 of the 64 chunks";
  EXPECT_EQ(wide.ranksComplete, 0);
  draw(64, done, 63);
  EXPECT_EQ(done.ranksComplete, 64) << "every gauge full and outlined at the end";
  c.op = static_cast<uint8_t>(trace::CollectiveOp::ReduceScatter);
  c.bytes = 64 * 1024;
  draw(64, scattered, 63);
  EXPECT_EQ(scattered.ranksComplete, 64) << "a reduce-scatter ends with each rank's own chunk complete";
  c.op = static_cast<uint8_t>(trace::CollectiveOp::AllGather);
  c.bytes = 1024;
  const int smallVertices = draw(12, small);
  EXPECT_EQ(small.transfersDrawn, 12);
  // 12 ranks chunk by chunk draw 144 chunks with their labels; 64 ranks as 64 chunks would be 4,096.
  EXPECT_LT(wideVertices, 2 * smallVertices) << wideVertices << " vs " << smallVertices;
}

}  // namespace
}  // namespace shardscope::ui
