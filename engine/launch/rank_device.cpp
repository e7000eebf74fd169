#include "engine/launch/rank_device.h"

#include <dlfcn.h>

#include <stdexcept>

#include "trace/rank_placements.h"

namespace shardscope::engine {

namespace {
constexpr int kFirstMultiRankNccl = 23000;  // NCCL 2.30.0 added NCCL_MULTI_RANK_GPU_ENABLE
}

GpuPlacement placeOnGpu(int localRank, int world, int gpus) {
  GpuPlacement p;
  p.gpus = gpus;
  p.gpu = gpus > 0 ? localRank % gpus : 0;
  // Ranks r with r % gpus == gpu, among 0..world-1.
  p.ranksOnGpu = gpus > 0 ? (world - 1 - p.gpu) / gpus + 1 : world;
  return p;
}

std::string GpuPlacement::describe() const {
  const std::string s = "cuda:" + std::to_string(gpu) + ", ";
  if (ranksOnGpu <= 1) return s + "one GPU per rank";
  if (sharing == SharedGpuMethod::MultiRankGpu) {
    return s + trace::ranksOnOneGpuClause(ranksOnGpu,
                                          "NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL " + ncclVersionString(ncclVersion));
  }
  return s + trace::ranksOnOneGpuClause(ranksOnGpu, "a distinct NCCL_HOSTID per rank: NCCL over sockets on loopback");
}

SharedGpuMethod chooseSharedGpuMethod(int ranksOnGpu, int ncclVersion, const char* forced) {
  const std::string choice = forced ? forced : "";
  if (!choice.empty() && choice != "hostid" && choice != "multirank") {
    throw std::runtime_error("SHARDSCOPE_SHARED_GPU='" + choice +
                             "' is not a method: use hostid or multirank, or unset it to choose by NCCL version.");
  }
  if (ranksOnGpu <= 1) return SharedGpuMethod::None;
  if (choice == "hostid") return SharedGpuMethod::HostIdPerRank;
  if (choice == "multirank") {
    if (ncclVersion < kFirstMultiRankNccl) {
      throw std::runtime_error("SHARDSCOPE_SHARED_GPU=multirank needs NCCL 2.30 or newer, but this process has NCCL " +
                               ncclVersionString(ncclVersion) +
                               "; unset SHARDSCOPE_SHARED_GPU (or set it to hostid) to share the GPU over sockets.");
    }
    return SharedGpuMethod::MultiRankGpu;
  }
  return ncclVersion >= kFirstMultiRankNccl ? SharedGpuMethod::MultiRankGpu : SharedGpuMethod::HostIdPerRank;
}

std::string ncclVersionString(int code) {
  if (code <= 0) return "unknown";
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

int loadedNcclVersion() {
  // Looked up in what the process has loaded (LibTorch's CUDA library links NCCL), so a build
  // without NCCL still runs and simply reports none.
  using GetVersion = int (*)(int*);
  auto getVersion = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int version = 0;
  if (!getVersion || getVersion(&version) != 0) return 0;
  return version;
}

}  // namespace shardscope::engine
