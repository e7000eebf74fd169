// The last step of a block in its recomputation, out = residual + x W^T + b, with the product left
// uncomputed. Backward needs only x, W and the incoming gradient, never out's value, so a
// checkpointed block recomputed for backward can stop before its output projection, as PyTorch's
// non-reentrant checkpoint does (it ends the recomputation once backward has every tensor it saved:
// checkpoint_wrapper around a block leaves its last Linear and the residual add out). The
// gradients are computed with the matrix products autograd's linear backward uses, in the same
// order, so they are the same values.
#pragma once

#include <ATen/ATen.h>

namespace shardscope::engine {

// A tensor shaped as `residual` whose value is not to be read (it is not computed), and whose
// backward gives `residual`, `x`, `weight` and `bias` (if defined) their gradients of
// residual + linear(x, weight, bias).
at::Tensor unreadOutputProjection(const at::Tensor& residual, const at::Tensor& x, const at::Tensor& weight,
                                  const at::Tensor& bias);

}  // namespace shardscope::engine
