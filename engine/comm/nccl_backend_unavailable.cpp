// Stand-in for builds without CUDA: asking for NCCL is a user-facing error, not a crash.
#include <stdexcept>

#include "engine/comm/backend_factories.h"

namespace shardscope::engine {

std::unique_ptr<Communicator> makeNcclCommunicator(const c10::intrusive_ptr<c10d::Store>&, const RendezvousInfo&,
                                                   const RankDevice&) {
  throw std::runtime_error(
      "--device cuda needs a CUDA build of shardscope (LibTorch with CUDA and the CUDA toolkit); "
      "this build has no NCCL. Use --device cpu, or rebuild against a CUDA LibTorch.");
}

}  // namespace shardscope::engine
