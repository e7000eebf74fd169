// CollectiveStream for NCCL ranks: one communication stream per rank, ordered against the caller's
// stream with CUDA events (see engine/collective_stream.h). Every collective goes through this one
// stream, so they run in the order they were issued, which is also the order ProcessGroupNCCL's own
// NCCL stream runs them in; the marks around each one therefore time the collective itself.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include "engine/collective_stream.h"

namespace shardscope {

class CudaCollectiveStream final : public CollectiveStream {
 public:
  explicit CudaCollectiveStream(c10::DeviceIndex device);
  std::unique_ptr<PendingCollective> run(
      const std::function<c10::intrusive_ptr<c10d::Work>()>& issue) override;
  c10::Stream stream() const override { return comm_.unwrap(); }

 private:
  c10::DeviceIndex device_;
  c10::cuda::CUDAStream comm_;
};

}  // namespace shardscope
