// Resize a tensor's storage in place (bytes), keeping the StorageImpl every view shares.
#pragma once

#include <cstddef>

#include <ATen/ATen.h>

namespace shardscope {

// Note [freeing gathered parameters]: FSDP frees an unsharded parameter by resizing its storage to
// zero rather than dropping the tensor, so that views and autograd's saved references stay valid;
// resizing back and refilling the storage restores them all at once.
void setStorageBytes(const at::Tensor& tensor, size_t bytes);

}  // namespace shardscope
