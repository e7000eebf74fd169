#include "config/pipeline_config.h"

#include <gtest/gtest.h>

namespace shardscope::config {
namespace {

RunConfig pipeline(int world, int pp) {
  RunConfig c;
  c.model = ModelKind::Gpt;
  c.layers = 4;
  c.world = world;
  c.pp = pp;
  c.batch = 16;
  return c;
}

std::string problemOf(const RunConfig& c) { return validate(c).value_or(""); }

TEST(PipelineConfig, DefaultsFollowTheSchedule) {
  RunConfig c = pipeline(4, 2);
  EXPECT_EQ(pipelineShapeOf(c).stagesPerRank, 1);
  EXPECT_EQ(pipelineShapeOf(c).microBatches, 2);
  c.schedule = PipelineSchedule::Interleaved1F1B;
  EXPECT_EQ(pipelineShapeOf(c).stagesPerRank, 2);
  EXPECT_EQ(pipelineShapeOf(c).microBatches, 4);
  c.microbatches = 8;
  EXPECT_EQ(pipelineShapeOf(c).microBatches, 8);
  EXPECT_EQ(problemOf(c), "");
}

// The world is pp x dp x tp, each stage a block of consecutive ranks.
TEST(PipelineConfig, RanksLieInStagesOfConsecutiveRanks) {
  const PipelinePlace place = pipelinePlace(5, 8, 2);
  EXPECT_EQ(place.pipeRank, 1);
  EXPECT_EQ(place.stageRank, 1);
  EXPECT_EQ(place.stageRanks, 4);
  RunConfig c = pipeline(8, 2);
  c.tp = 2;
  EXPECT_EQ(dataRankCount(c), 2);
}

// Bad input names the value and the fix.
TEST(PipelineConfig, WhatDoesNotFitIsRefusedNamingTheValueAndTheFix) {
  RunConfig c = pipeline(6, 4);
  EXPECT_NE(problemOf(c).find("--pp 4 does not divide --world 6"), std::string::npos) << problemOf(c);
  c = pipeline(4, 2);
  c.layers = 1;
  EXPECT_NE(problemOf(c).find("--layers 2 or more"), std::string::npos) << problemOf(c);
  c = pipeline(4, 2);
  c.stagesPerRank = 2;
  EXPECT_NE(problemOf(c).find("Drop --stages-per-rank"), std::string::npos) << problemOf(c);
  c = pipeline(4, 2);
  c.microbatches = 3;
  EXPECT_NE(problemOf(c).find("--microbatches 3 does not divide a data rank's batch of 8"), std::string::npos)
      << problemOf(c);
  c = pipeline(2, 2);
  c.microbatches = 1;
  EXPECT_NE(problemOf(c).find("Pass --microbatches 2 or more"), std::string::npos) << problemOf(c);
  c = pipeline(4, 1);
  c.microbatches = 4;
  EXPECT_NE(problemOf(c).find("--pp is 1"), std::string::npos) << problemOf(c);
  c = pipeline(4, 2);
  c.accumulate = 2;
  EXPECT_NE(problemOf(c).find("Drop --accumulate"), std::string::npos) << problemOf(c);
  c = pipeline(4, 2);
  c.batch = 5;
  EXPECT_NE(problemOf(c).find("--batch 5 is not divisible by the 2 data-parallel ranks"), std::string::npos)
      << problemOf(c);
}

TEST(PipelineConfig, WhatCrossesIsABlocksOutput) {
  RunConfig c = pipeline(4, 2);
  c.seq = 16;
  c.hidden = 32;
  EXPECT_EQ(boundaryShape(c, 3), (std::vector<int64_t>{3, 16, 32}));
  c.tp = 2;
  c.sequenceParallel = true;
  EXPECT_EQ(boundaryShape(c, 3), (std::vector<int64_t>{3, 8, 32}));
  c.model = ModelKind::Mlp;
  EXPECT_EQ(boundaryShape(c, 3), (std::vector<int64_t>{3, 32}));
}

}  // namespace
}  // namespace shardscope::config
