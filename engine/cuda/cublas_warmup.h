// cuBLAS's workspaces, made where the memory lanes can name them. PyTorch gives each cuBLAS and
// cuBLASLt handle a workspace per stream (32 MiB and 1 MiB on a Hopper GPU), allocated from the
// caching allocator at the first matmul on that thread and kept for the life of the process. A
// rank's first matmuls run in its first forward (the training thread) and first backward
// (autograd's device thread), so without this the hook recorded ~65 MiB of workspace as
// activation held from then on, in every GPU run.
#pragma once

#include <ATen/ATen.h>

namespace shardscope::engine {

// One small linear layer forward and backward on the current stream, in `dtype`, under the
// `other` role: the training thread's and autograd's device thread's workspaces exist, recorded
// as other, before the model's first step. Call after the allocator hook is attached.
void makeCublasWorkspacesAsOther(c10::DeviceIndex device, at::ScalarType dtype);

}  // namespace shardscope::engine
