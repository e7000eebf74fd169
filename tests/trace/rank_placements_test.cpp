// The one line naming where a run's ranks ran: shared leading parts once, the rest per rank.
#include <gtest/gtest.h>

#include "trace/rank_placements.h"

namespace shardscope::trace {
namespace {

TEST(RankPlacements, EqualPlacementsAreSaidOnce) {
  EXPECT_EQ(describeRankPlacements({"cpu / gloo", "cpu / gloo", "cpu / gloo"}), "cpu / gloo");
}

TEST(RankPlacements, WhatDiffersIsNamedPerRank) {
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 0-1", "cpu / gloo / cores 2-3"}),
            "cpu / gloo / rank 0: cores 0-1; rank 1: cores 2-3");
  EXPECT_EQ(
      describeRankPlacements({"cuda:0 / nccl / cuda:0, one GPU per rank", "cuda:1 / nccl / cuda:1, one GPU per rank"}),
      "rank 0: cuda:0 / nccl / cuda:0, one GPU per rank; rank 1: cuda:1 / nccl / cuda:1, one GPU per rank");
  // Parts are whole: "cores 1" and "cores 12" share "cores 1" as text, not as a part.
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 1", "cpu / gloo / cores 12"}),
            "cpu / gloo / rank 0: cores 1; rank 1: cores 12");
}

TEST(RankPlacements, ARankThatDidNotReportIsNamedNotCoveredByAnother) {
  EXPECT_EQ(describeRankPlacements({}), "");
  EXPECT_EQ(describeRankPlacements({"", ""}), "");
  EXPECT_EQ(describeRankPlacements({"cpu / gloo / cores 0", ""}), "rank 0: cpu / gloo / cores 0; rank 1: not reported");
  EXPECT_EQ(describeRankPlacements({"", "cpu / gloo"}), "rank 0: not reported; rank 1: cpu / gloo");
}

}  // namespace
}  // namespace shardscope::trace
