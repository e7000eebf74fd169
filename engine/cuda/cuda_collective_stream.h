// CollectiveStream for NCCL ranks: one communication stream per rank, ordered against the caller's
// stream with CUDA events. Every collective goes through it in issue order, which is also the order
// ProcessGroupNCCL's own NCCL stream runs them in. See Note [stream ordering] in
// engine/comm/collective_stream.h.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include "engine/comm/collective_stream.h"

namespace shardscope::engine {

class CudaCollectiveStream final : public CollectiveStream {
 public:
  // Where the NCCL kernel itself runs: on this communication stream (high priority, as FSDP2's
  // all-gather and reduce-scatter streams), or on ProcessGroupNCCL's internal NCCL stream (normal
  // priority unless TORCH_NCCL_HIGH_PRIORITY=1), which this stream then waits for.
  enum class KernelStream { Own, ProcessGroups };
  CudaCollectiveStream(c10::DeviceIndex device, KernelStream kernels);
  std::unique_ptr<PendingCollective> run(
      const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue) override;
  c10::Stream stream() const override { return comm_.unwrap(); }

 private:
  c10::DeviceIndex device_;
  KernelStream kernels_;
  c10::cuda::CUDAStream comm_;
};

}  // namespace shardscope::engine
