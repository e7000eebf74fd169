// The CPU allocator hook: every allocation and free a rank makes through LibTorch's CPU allocator
// becomes a Memory event with its size and the role in force on the allocating thread (RoleScope).
// The role travels with the allocation, so its free is attributed to the same role; retag() moves
// a live allocation to another role once its purpose is known (a gradient autograd allocated
// during backward becomes grad_full). The CUDA caching allocator's trace hook (allocated and
// reserved) feeds the same events in GPU builds.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "trace/events.h"

namespace shardscope::engine {

class RankRecorder;

// Wraps LibTorch's default CPU allocator; call once, before the rank creates tensors. The hooks
// (this one's, and the CUDA allocator's through recordMemoryEvent) record into `recorder`, which
// must outlive every allocation (the rank worker's never dies).
void installRecordingCpuAllocator(RankRecorder& recorder);

// Whether the CPU allocations made from now on are recorded (true until told otherwise). A GPU
// rank's lanes are its device's memory (what torch.cuda.memory_allocated counts): the host memory
// it allocates (initial values built on the CPU, copies to and from it) is not, so a GPU rank stops
// recording it once the CUDA allocator's hook is on. A block's free and retags follow whether its
// allocation was recorded.
void setHostMemoryRecorded(bool recorded);

// CPU allocations made inside, on this thread, are a GPU rank's host memory for training (--offload
// cpu: the optimizer's state, its step's temporaries): recorded in MemorySpace::Host, whether or not
// host memory is recorded otherwise (setHostMemoryRecorded), and their frees and retags with them.
class HostMemoryScope {
 public:
  HostMemoryScope();
  ~HostMemoryScope();
  HostMemoryScope(const HostMemoryScope&) = delete;
  HostMemoryScope& operator=(const HostMemoryScope&) = delete;

 private:
  bool previous_;
};

// An uninitialised host tensor for training state, recorded in MemorySpace::Host with the role and
// unit in force: pinned (page-locked, through the CUDA host allocator, so copies to and from a GPU
// run asynchronously) when `pinned`, else from the recording CPU allocator. Pinning is recorded as
// a pin_host_memory span of `unitName`: a new block costs the driver 0.1 to 0.2 s per 200 MiB
// on the H200 (bench/pinned_alloc_probe.py); the host allocator's cache makes reuse free.
at::Tensor emptyHostTensor(at::IntArrayRef sizes, at::ScalarType dtype, bool pinned, const std::string& unitName);

// Re-attributes the storage behind `tensor` to `role` (no-op for memory the hook did not see).
// Non-CPU tensors go to the device's retagger (the CUDA allocator hook registers one).
void retagStorage(const at::Tensor& tensor, trace::MemoryRole role);
using DeviceRetagger = void (*)(const at::Tensor& tensor, trace::MemoryRole role);
void setDeviceRetagger(DeviceRetagger retagger);

// Counts the storage behind `tensor` as part of model unit `unit` from now on: for memory made
// where the unit was not known (the optimizer's state, created lazily inside its step).
void assignUnit(const at::Tensor& tensor, int32_t unit);
using DeviceUnitAssigner = void (*)(const at::Tensor& tensor, int32_t unit);
void setDeviceUnitAssigner(DeviceUnitAssigner assigner);

// One Memory event: `bytes` more in `role` (negative: fewer), or, with `fromRole`, `bytes` moved
// from `fromRole` to `role` (fromRole == role: bytes of that role counted in `unit` from now on).
// `unit`: the model unit the bytes belong to. Never blocks; dropped when recording is off, or no
// recorder is installed (installRecordingCpuAllocator).
void recordMemoryEvent(int64_t bytes, trace::MemoryRole role, uint8_t fromRole = trace::kNoRole,
                       int32_t unit = trace::kNoUnit, trace::MemorySpace space = trace::MemorySpace::Device);

}  // namespace shardscope::engine
