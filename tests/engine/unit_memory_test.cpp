// "Who holds what" is measured: memory events name the model unit their bytes belong to, so what a
// rank holds of each unit comes from the allocator. Checked against the model's own sizes on real
// multi-rank runs: under full_shard a rank holds 1/N of each unit and the whole of the one it is
// computing; under ddp every rank holds every unit whole.
#include <gtest/gtest.h>

#include "engine/launch/run_controller.h"
#include "tests/support/run_cli.h"
#include "config/model_layout.h"

namespace shardscope::engine {
namespace {

using trace::MemoryRole;

int64_t at(const trace::RoleBytes& b, MemoryRole role) { return b[static_cast<int>(role)]; }

// Bytes of unit u (index u for blocks.u, the root last in unitElements) in fp32, padded to N.
int64_t paddedUnitBytes(const config::RunConfig& c, int unit) {
  const auto elements = config::unitElements(c);
  const int64_t n = elements[unit == config::kRootUnit ? elements.size() - 1 : static_cast<size_t>(unit)];
  return (n + c.world - 1) / c.world * c.world * 4;
}

const trace::ComputeSpan& computeSpan(const trace::RankTimeline& t, trace::ComputeKind kind, const std::string& unit,
                                      int step) {
  for (const auto& c : t.compute) {
    if (static_cast<trace::ComputeKind>(c.op) == kind && c.text() == unit && c.step == step &&
        !trace::isRecomputation(c))
      return c;
  }
  throw std::runtime_error("no " + std::string(trace::computeKindName(kind)) + " span of " + unit);
}

TEST(UnitMemory, FullShardHoldsAShardOfEachUnitAndTheGatheredUnitItComputes) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::FullShard;
  c.prefetch = 0;  // only the unit computing (and the root) is gathered
  const RunResult run = runTraining(c, SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(run.ok) << run.error;
  const auto& rec = run.recording;
  EXPECT_EQ(rec.recordedUnits(), (std::vector<int32_t>{-1, 0, 1, 2}));
  for (int r = 0; r < c.world; ++r) {
    const auto& span = computeSpan(rec.rank(r), trace::ComputeKind::Forward, "blocks.1", 1);
    const int64_t mid = (span.beginNs + span.endNs) / 2;
    for (int unit : {config::kRootUnit, 0, 1, 2}) {
      const auto held = rec.unitMemoryAt(r, unit, mid);
      EXPECT_EQ(at(held, MemoryRole::ParamShard), paddedUnitBytes(c, unit) / c.world)
          << "rank " << r << " unit " << unit;
      // Adam's two moments of the shard, counted in its unit after the first step.
      EXPECT_EQ(at(held, MemoryRole::OptimizerState), 2 * paddedUnitBytes(c, unit) / c.world) << unit;
      const bool gathered = unit == 1 || unit == config::kRootUnit;
      EXPECT_EQ(at(held, MemoryRole::ParamGathered), gathered ? paddedUnitBytes(c, unit) : 0)
          << "rank " << r << " unit " << unit;
    }
    // Mid-backward of blocks.1: blocks.2's gradients are already reduced to a shard.
    const auto& back = computeSpan(rec.rank(r), trace::ComputeKind::Backward, "blocks.1", 1);
    const auto later = rec.unitMemoryAt(r, 2, (back.beginNs + back.endNs) / 2);
    EXPECT_EQ(at(later, MemoryRole::GradShard), paddedUnitBytes(c, 2) / c.world);
    EXPECT_EQ(at(later, MemoryRole::ParamGathered), 0);
  }
}

TEST(UnitMemory, DdpHoldsEveryUnitWholeOnEveryRank) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::Ddp;
  c.world = 2;
  const RunResult run = runTraining(c, SHARDSCOPE_BINARY, {});
  ASSERT_TRUE(run.ok) << run.error;
  const auto elements = config::unitElements(c);
  const auto& rec = run.recording;
  for (int r = 0; r < c.world; ++r) {
    const auto& span = computeSpan(rec.rank(r), trace::ComputeKind::Forward, "blocks.0", 1);
    for (int unit : {config::kRootUnit, 0, 1, 2}) {
      const int64_t full = 4 * elements[unit == config::kRootUnit ? elements.size() - 1 : static_cast<size_t>(unit)];
      const auto held = rec.unitMemoryAt(r, unit, span.beginNs);
      EXPECT_EQ(at(held, MemoryRole::ParamShard), full) << "rank " << r << " unit " << unit;
      EXPECT_EQ(at(held, MemoryRole::OptimizerState), 2 * full) << "rank " << r << " unit " << unit;
      EXPECT_EQ(at(held, MemoryRole::ParamGathered), 0);
    }
  }
}

}  // namespace
}  // namespace shardscope::engine
