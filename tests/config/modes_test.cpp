#include "config/modes.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "config/strategies.h"

namespace shardscope::config {
namespace {

template <typename E>
class Modes : public ::testing::Test {};
using AllModes = ::testing::Types<ModelKind, StrategyKind, OptimizerKind, DeviceKind, BindCores, Precision,
                                  Checkpointing, RecordingMode, StepGateMode, MemoryCheck, PipelineSchedule>;
TYPED_TEST_SUITE(Modes, AllModes);

// Each value has one name that reads back to it; the values are the enumerators 0..n-1 with none
// left out, so a value without a row cannot exist between two that have one.
TYPED_TEST(Modes, EveryNameReadsBackToItsValue) {
  using E = TypeParam;
  std::set<std::string> names;
  std::set<int> values;
  for (const auto& entry : modeNames(E{})) {
    EXPECT_TRUE(names.insert(entry.name).second) << "two values named " << entry.name;
    values.insert(static_cast<int>(entry.value));
    EXPECT_EQ(parseMode<E>(entry.name), entry.value) << entry.name;
    EXPECT_STREQ(modeName(entry.value), entry.name);
    EXPECT_EQ(nlohmann::json(entry.value), entry.name) << "JSON writes the name, not the number";
    std::ostringstream text;
    text << entry.value;
    EXPECT_EQ(text.str(), entry.name);
  }
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(*values.begin(), 0);
  EXPECT_EQ(*values.rbegin(), static_cast<int>(values.size()) - 1);
}

TYPED_TEST(Modes, AnythingElseIsRefusedNamingTheChoices) {
  using E = TypeParam;
  const std::string first = modeNames(E{}).front().name;
  for (const std::string wrong : {std::string(), " " + first, first + " ", std::string("?"), std::string(200, 'x')}) {
    EXPECT_FALSE(parseMode<E>(wrong).has_value()) << "'" << wrong << "'";
    E value = modeNames(E{}).back().value;
    const auto error = readMode(wrong, value);
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(value, modeNames(E{}).back().value) << "a refused name leaves the value alone";
    EXPECT_NE(error->find(std::string("--") + modeOption(E{})), std::string::npos) << *error;
    EXPECT_NE(error->find(modeChoices<E>(", ")), std::string::npos) << *error;
    EXPECT_LT(error->size(), 200u) << "a long value is clipped, not echoed whole";
  }
}

TEST(StrategyTable, OneRowPerStrategyAndTheZeroStagesInOrder) {
  const auto& table = strategyTable();
  ASSERT_EQ(table.size(), modeNames(StrategyKind{}).size());
  std::vector<std::string> stages;  // of the rows that are not hybrid, in order
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(&traitsOf(table[i].kind), &table[i]);
    EXPECT_STREQ(modeNames(StrategyKind{})[i].name, table[i].name);
    if (!table[i].replicatesShardGroups) stages.push_back(table[i].zeroStage);
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"ZeRO-0", "ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3"}))
      << "rows go in the order of what they shard: ddp and no_shard shard nothing";
  // no_shard is ddp's memory with FSDP's reduction, a unit at a time: neither buckets nor shards.
  EXPECT_FALSE(traitsOf(StrategyKind::NoShard).shardsOptimizer || traitsOf(StrategyKind::NoShard).gathersUnits);
  EXPECT_FALSE(traitsOf(StrategyKind::NoShard).reducesInBuckets);
  EXPECT_TRUE(traitsOf(StrategyKind::Ddp).reducesInBuckets);
  EXPECT_EQ(strategyWithUnitGathers(0), StrategyKind::Ddp) << "a job without all-gathers reads as ddp";
  // HSDP: ZeRO-3 (or ZeRO-2) inside each shard group, replicated across them.
  EXPECT_EQ(zeroName(StrategyKind::HybridShard), "HYBRID_SHARD, ZeRO-3 per group");
  EXPECT_EQ(traitsOf(StrategyKind::HybridShard).reshardsAfterForward,
            traitsOf(StrategyKind::FullShard).reshardsAfterForward);
  EXPECT_EQ(traitsOf(StrategyKind::HybridShardZero2).reshardsAfterForward,
            traitsOf(StrategyKind::ShardGradOp).reshardsAfterForward);
  EXPECT_FALSE(traitsOf(StrategyKind::FullShard).replicatesShardGroups);
  // What each stage adds to the one before: the ZeRO paper's P_os, P_os+g, P_os+g+p.
  EXPECT_FALSE(traitsOf(StrategyKind::Ddp).shardsOptimizer);
  EXPECT_TRUE(traitsOf(StrategyKind::Zero1).shardsOptimizer && !traitsOf(StrategyKind::Zero1).shardsGradients);
  EXPECT_TRUE(traitsOf(StrategyKind::ShardGradOp).shardsGradients);
  EXPECT_FALSE(traitsOf(StrategyKind::ShardGradOp).reshardsAfterForward);
  EXPECT_TRUE(traitsOf(StrategyKind::FullShard).reshardsAfterForward);
  EXPECT_EQ(zeroName(StrategyKind::FullShard), "FULL_SHARD, ZeRO-3");
}

TEST(StrategyTable, ListsAreReadOnceAndRefuseUnknownEntries) {
  std::vector<StrategyKind> kinds;
  ASSERT_FALSE(parseStrategyList("full_shard,ddp,full_shard", kinds));
  EXPECT_EQ(kinds, (std::vector<StrategyKind>{StrategyKind::FullShard, StrategyKind::Ddp}));
  for (const char* bad : {"", "ddp,", ",ddp", "ddp,,zero1", "ddp,zero3", "DDP"}) {
    const auto error = parseStrategyList(bad, kinds);
    ASSERT_TRUE(error.has_value()) << bad;
    EXPECT_NE(error->find("ddp, no_shard, zero1, shard_grad_op, full_shard"), std::string::npos) << *error;
  }
  EXPECT_EQ(defaultCompareStrategies(),
            (std::vector<StrategyKind>{StrategyKind::Ddp, StrategyKind::FullShard, StrategyKind::ShardGradOp}));
}

}  // namespace
}  // namespace shardscope::config
