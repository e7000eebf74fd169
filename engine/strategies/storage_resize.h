// Resize a tensor's storage in place (bytes), keeping the StorageImpl every view shares.
#pragma once

#include <cstddef>

#include <ATen/ATen.h>

namespace shardscope::engine {

// Note [freeing gathered parameters]
// FSDP frees an unsharded parameter by resizing its storage to zero rather than dropping the
// tensor, so that views and autograd's saved references stay valid; resizing back and refilling
// the storage restores them all at once. The parameters the model computes with are fresh tensors
// set onto that storage (ShardedStrategy's constructor): they share its memory but not its version
// counter, so an all-gather refilling it is no in-place edit of a tensor autograd saved. A buffer
// is never freed while an all-gather still writes it (ShardedStrategy::reshard waits first), and
// on a GPU its storage is allocated on the communication stream
// (Note [freeing collective buffers] in engine/comm/collective_stream.h).
void setStorageBytes(const at::Tensor& tensor, size_t bytes);

}  // namespace shardscope::engine
