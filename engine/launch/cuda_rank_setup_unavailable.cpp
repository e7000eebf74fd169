// Builds whose LibTorch has no CUDA: GPU ranks cannot be set up, and the error says what to do.
#include <stdexcept>

#include "engine/launch/rank_device.h"

namespace shardscope::engine {

std::unique_ptr<RankDevice> setupCudaRank(const GpuPlacement&, bool, at::ScalarType) {
  throw std::runtime_error(
      "--device cuda: this shardscope was built against a LibTorch without CUDA. Use --device cpu, "
      "or rebuild against a CUDA LibTorch (scripts/device_gpu.sh does on a GPU machine).");
}

int visibleCudaDevices() { return 0; }

}  // namespace shardscope::engine
