// The CUDA side of memory recording. Every allocation and free of the CUDA caching allocator (its
// trace hook, the one torch.cuda.memory._record_memory_history feeds from) becomes a Memory event
// attributed to the role in force when it was allocated, exactly as the CPU hook does. Blocks the
// allocator reserved from the driver but holds no tensor in are the allocator_cache lane, so
// tensor roles + cache = torch.cuda.memory_reserved. What the process holds on the device beyond
// that (CUDA context, NCCL's buffers, anything not allocated through PyTorch) is the device_runtime
// lane, sampled from NVML's per-process figure, or from cudaMemGetInfo when the rank has its GPU
// to itself.
#pragma once

#include <ATen/ATen.h>

#include "trace/events.h"

namespace shardscope::engine {

// Attaches the hook for `device`. Call once, after CUDA is initialised and before the rank
// allocates on the device. `sharesGpu`: other rank processes use this GPU (so whole-device figures
// do not describe this process).
void attachCudaMemoryTracker(int device, bool sharesGpu);

// Samples the device_runtime lane (called periodically from the CUDA clock's thread).
void sampleDeviceRuntimeMemory();

// Whether the runtime lane has a per-process source (false: the lane stays empty and says why).
bool deviceRuntimeMemoryAvailable();

}  // namespace shardscope::engine
