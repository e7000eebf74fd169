// Where ranks go when there are fewer GPUs than ranks (pure arithmetic: runs without a GPU).
#include <gtest/gtest.h>

#include "engine/launch/rank_device.h"
#include "trace/rank_placements.h"

namespace shardscope::engine {
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
  auto p = placeOnGpu(1, 4, 1);
  EXPECT_EQ(p.gpu, 0);
  EXPECT_EQ(p.ranksOnGpu, 4);
  p.sharing = SharedGpuMethod::HostIdPerRank;
  EXPECT_NE(p.describe().find("4 ranks on one GPU"), std::string::npos) << p.describe();
  EXPECT_NE(p.describe().find("NCCL_HOSTID"), std::string::npos) << p.describe();
  // What a view reads back from a device line (the Schedule tab's shared-GPU note), either way.
  EXPECT_EQ(trace::ranksOnOneGpuIn("cuda:0 / nccl / " + p.describe() + " / cores 1"),
            "4 ranks on one GPU (a distinct NCCL_HOSTID per rank: NCCL over sockets on loopback)");
  p.sharing = SharedGpuMethod::MultiRankGpu;
  p.ncclVersion = 23005;
  EXPECT_NE(p.describe().find("NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30.5"), std::string::npos) << p.describe();
  EXPECT_EQ(trace::ranksOnOneGpuIn(p.describe()), "4 ranks on one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30.5)");
  EXPECT_EQ(trace::ranksOnOneGpuIn(placeOnGpu(0, 2, 2).describe()), "") << "one GPU per rank";
}

// NCCL's own multi-rank support where the loaded NCCL has it (2.30+), a host id per rank before
// that; SHARDSCOPE_SHARED_GPU forces either, and an impossible or unknown choice is refused.
TEST(GpuPlacement, SharedGpuMethodFollowsTheNcclVersion) {
  EXPECT_EQ(chooseSharedGpuMethod(1, 23000, nullptr), SharedGpuMethod::None);
  EXPECT_EQ(chooseSharedGpuMethod(2, 22809, nullptr), SharedGpuMethod::HostIdPerRank);  // torch 2.11's
  EXPECT_EQ(chooseSharedGpuMethod(2, 0, ""), SharedGpuMethod::HostIdPerRank);           // unknown NCCL
  EXPECT_EQ(chooseSharedGpuMethod(2, 23000, nullptr), SharedGpuMethod::MultiRankGpu);
  EXPECT_EQ(chooseSharedGpuMethod(4, 23102, nullptr), SharedGpuMethod::MultiRankGpu);
  EXPECT_EQ(chooseSharedGpuMethod(2, 23102, "hostid"), SharedGpuMethod::HostIdPerRank);
  EXPECT_EQ(chooseSharedGpuMethod(2, 23000, "multirank"), SharedGpuMethod::MultiRankGpu);
  try {
    chooseSharedGpuMethod(2, 22809, "multirank");
    ADD_FAILURE() << "NCCL 2.28 has no multi-rank support";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("needs NCCL 2.30 or newer, but this process has NCCL 2.28.9"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(chooseSharedGpuMethod(2, 23000, "mps"), std::runtime_error);
  EXPECT_THROW(chooseSharedGpuMethod(1, 23000, "mps"), std::runtime_error) << "refused even when unused";
  EXPECT_EQ(ncclVersionString(22809), "2.28.9");
  EXPECT_EQ(ncclVersionString(0), "unknown");
}

}  // namespace
}  // namespace shardscope::engine
