#include "engine/cuda/cublas_warmup.h"

#include <ATen/core/grad_mode.h>

#include "engine/recording/recorder.h"

namespace shardscope::engine {

void makeCublasWorkspacesAsOther(c10::DeviceIndex device, at::ScalarType dtype) {
  // The role autograd's device thread takes too: it has no scope of its own (engine/recording/recorder.h).
  RoleScope role(trace::MemoryRole::Other);
  at::AutoGradMode withGrad(true);  // whatever mode the caller is in: the backward is the point
  const auto options = at::TensorOptions().device(at::kCUDA, device).dtype(dtype);
  // 64 x 64 keeps to the shapes cuBLASLt takes (a bias in the epilogue), as the model's layers do.
  const at::Tensor x = at::randn({64, 64}, options).requires_grad_(true);
  const at::Tensor w = at::randn({64, 64}, options).requires_grad_(true);
  const at::Tensor b = at::randn({64}, options).requires_grad_(true);
  at::linear(x, w, b).sum().backward();  // forward here, backward on autograd's device thread
}

}  // namespace shardscope::engine
