// How --bind-cores rank splits the cores a run may use among the ranks on a host.
#include <gtest/gtest.h>

#include "engine/core_binding.h"

namespace shardscope {
namespace {

using Cores = std::vector<int>;

TEST(CoreBinding, EqualConsecutiveSlicesInOrder) {
  Cores sixteen;
  for (int c = 0; c < 16; ++c) sixteen.push_back(c);
  EXPECT_EQ(coreSlice(sixteen, 0, 4), (Cores{0, 1, 2, 3}));
  EXPECT_EQ(coreSlice(sixteen, 3, 4), (Cores{12, 13, 14, 15}));
  EXPECT_EQ(coreSlice(sixteen, 1, 1), Cores{}) << "a local rank beyond the local world has none";
}

TEST(CoreBinding, LeftoverCoresGoToTheFirstRanks) {
  Cores ten;
  for (int c = 0; c < 10; ++c) ten.push_back(c);
  EXPECT_EQ(coreSlice(ten, 0, 4), (Cores{0, 1, 2}));
  EXPECT_EQ(coreSlice(ten, 1, 4), (Cores{3, 4, 5}));
  EXPECT_EQ(coreSlice(ten, 2, 4), (Cores{6, 7}));
  EXPECT_EQ(coreSlice(ten, 3, 4), (Cores{8, 9}));
}

TEST(CoreBinding, SlicesFollowTheAllowedCoresNotTheirNumbers) {
  // A run started under `taskset -c 2,3,6,7` splits those four.
  EXPECT_EQ(coreSlice({2, 3, 6, 7}, 0, 2), (Cores{2, 3}));
  EXPECT_EQ(coreSlice({2, 3, 6, 7}, 1, 2), (Cores{6, 7}));
}

TEST(CoreBinding, MoreRanksThanCoresShareThemRoundRobin) {
  EXPECT_EQ(coreSlice({0, 1}, 0, 4), Cores{0});
  EXPECT_EQ(coreSlice({0, 1}, 1, 4), Cores{1});
  EXPECT_EQ(coreSlice({0, 1}, 2, 4), Cores{0});
  EXPECT_EQ(coreSlice({5}, 3, 4), Cores{5});
  EXPECT_EQ(coreSlice({}, 0, 2), Cores{});
}

TEST(CoreBinding, DescribedAsTasksetTakesThem) {
  EXPECT_EQ(describeCores({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(describeCores({0, 2, 4, 5}), "0,2,4-5");
  EXPECT_EQ(describeCores({7}), "7");
  EXPECT_EQ(describeCores({}), "");
}

}  // namespace
}  // namespace shardscope
