// Where ranks go when there are fewer GPUs than ranks (pure arithmetic: runs without a GPU).
#include <gtest/gtest.h>

#include "engine/rank_device.h"

namespace shardscope {
namespace {

TEST(GpuPlacement, OneGpuPerRankWhenThereAreEnough) {
  for (int r = 0; r < 4; ++r) {
    const auto p = placeOnGpu(r, 4, 8);
    EXPECT_EQ(p.gpu, r);
    EXPECT_EQ(p.ranksOnGpu, 1);
    EXPECT_NE(p.describe().find("one GPU per rank"), std::string::npos) << p.describe();
  }
}

TEST(GpuPlacement, RanksShareGpusRoundRobinWhenThereAreFewer) {
  // 5 ranks on 2 GPUs: GPU 0 takes ranks 0, 2, 4; GPU 1 takes 1 and 3.
  const int expectedGpu[] = {0, 1, 0, 1, 0};
  const int expectedSharing[] = {3, 2, 3, 2, 3};
  for (int r = 0; r < 5; ++r) {
    const auto p = placeOnGpu(r, 5, 2);
    EXPECT_EQ(p.gpu, expectedGpu[r]) << "rank " << r;
    EXPECT_EQ(p.ranksOnGpu, expectedSharing[r]) << "rank " << r;
  }
  const auto p = placeOnGpu(1, 4, 1);
  EXPECT_EQ(p.gpu, 0);
  EXPECT_EQ(p.ranksOnGpu, 4);
  EXPECT_NE(p.describe().find("4 ranks on one GPU"), std::string::npos) << p.describe();
  EXPECT_NE(p.describe().find("NCCL_HOSTID"), std::string::npos) << p.describe();
}

}  // namespace
}  // namespace shardscope
