#include "engine/strategies/storage_resize.h"

#include <ATen/native/Resize.h>
#ifdef SHARDSCOPE_HAVE_CUDA
#include <ATen/native/cuda/Resize.h>
#endif

namespace shardscope::engine {

void setStorageBytes(const at::Tensor& tensor, size_t bytes) {
  auto* impl = tensor.storage().unsafeGetStorageImpl();
  if (tensor.is_cpu()) {
    at::native::resize_bytes_cpu(impl, bytes);
    return;
  }
#ifdef SHARDSCOPE_HAVE_CUDA
  if (tensor.is_cuda()) {
    at::native::resize_bytes_cuda(impl, bytes);
    return;
  }
#endif
  TORCH_CHECK(false, "setStorageBytes: unsupported device ", tensor.device());
}

}  // namespace shardscope::engine
