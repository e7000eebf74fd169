#include "engine/rank_device.h"

namespace shardscope {

GpuPlacement placeOnGpu(int localRank, int world, int gpus) {
  GpuPlacement p;
  p.gpus = gpus;
  p.gpu = gpus > 0 ? localRank % gpus : 0;
  // Ranks r with r % gpus == gpu, among 0..world-1.
  p.ranksOnGpu = gpus > 0 ? (world - 1 - p.gpu) / gpus + 1 : world;
  return p;
}

std::string GpuPlacement::describe() const {
  std::string s = "cuda:" + std::to_string(gpu) + ", ";
  if (ranksOnGpu <= 1) return s + "one GPU per rank";
  return s + std::to_string(ranksOnGpu) + " ranks on one GPU (a distinct NCCL_HOSTID per rank: "
             "NCCL over sockets on loopback)";
}

}  // namespace shardscope
