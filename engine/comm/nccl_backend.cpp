// ProcessGroupNCCL for GPU ranks. Compiled only when LibTorch has CUDA (SHARDSCOPE_HAVE_CUDA).
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "engine/comm/backend_factories.h"
#include "engine/comm/c10d_communicator.h"
#include "engine/launch/rank_device.h"

namespace shardscope::engine {

std::unique_ptr<Communicator> makeNcclCommunicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RendezvousInfo& info, const RankDevice& gpu) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = std::chrono::milliseconds(static_cast<int64_t>(info.collectiveTimeoutS * 1000));
  auto backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, info.rank, info.worldSize, options);
  // Create the NCCL communicator now, not inside the first all-gather, so its setup (seconds over
  // sockets) is not drawn as communication time of the first step.
  backend->eagerConnectSingleDevice(gpu.device());
  return std::make_unique<C10dCommunicator>(backend, store, "nccl", CollectiveRecipes{}, gpu.makeCollectiveStream());
}

}  // namespace shardscope::engine
