// The one line naming where a run's ranks ran: shared parts once, differing parts per rank.
#include <gtest/gtest.h>

#include "trace/rank_placements.h"

namespace shardscope::trace {
namespace {

TEST(RankPlacements, EqualPlacementsAreSaidOnce) {
  EXPECT_EQ(describeRankPlacements({"cpu / gloo", "cpu / gloo", "cpu / gloo"}), "cpu / gloo");
}

TEST(RankPlacements, WhatDiffersIsNamedPerRank) {
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 0-1", "cpu / gloo / cores 2-3"}),
            "cpu / gloo / rank 0: cores 0-1, rank 1: cores 2-3");
  EXPECT_EQ(describeRankPlacements({"cuda:0 / nccl", "cuda:1 / nccl"}),
            "rank 0: cuda:0 / nccl, rank 1: cuda:1 / nccl");
  // Parts are whole: "cores 1" and "cores 12" share "cores 1" as text, not as a part.
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 1", "cpu / gloo / cores 12"}),
            "cpu / gloo / rank 0: cores 1, rank 1: cores 12");
}

TEST(RankPlacements, RanksNotYetReportedAreLeftOut) {
  EXPECT_EQ(describeRankPlacements({}), "");
  EXPECT_EQ(describeRankPlacements({"", ""}), "");
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 0", ""}), "cpu / gloo / cores 0");
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 0", "", "cpu / gloo / cores 2"}),
            "cpu / gloo / rank 0: cores 0, rank 2: cores 2");
}

}  // namespace
}  // namespace shardscope::trace
