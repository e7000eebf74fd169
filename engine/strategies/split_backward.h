// Zero bubble's backward in two, as torch.distributed.pipelining splits it (stage_backward_input and
// stage_backward_weight): I computes the gradient of the input alone, and on its way remembers, at
// each autograd node where a weight's gradient leaves the path to the input, the gradient that
// arrived there; W starts from those nodes and computes the weights' gradients only. I + W does the
// work of one backward, not one and a half.
#pragma once

#include <memory>
#include <vector>

#include <ATen/ATen.h>

namespace shardscope::engine {

// What W needs from I. Opaque here: it holds autograd nodes.
struct DeferredWeightGradients;

// I: the gradient of `input` (a leaf asking for one) from `output` given `gradOutput`, keeping the
// graph that `weights`' gradients need in `deferred`. Returns null for `deferred` when the split
// cannot be made (a weight whose gradient never meets the input's path): the caller then runs W as
// a whole backward from `output`, which it must keep.
at::Tensor backwardInputOnly(const at::Tensor& output, const at::Tensor& gradOutput, const at::Tensor& input,
                             const std::vector<at::Tensor>& weights,
                             std::shared_ptr<DeferredWeightGradients>& deferred);

// W: accumulates each weight's gradient into its .grad (firing its post-accumulate hooks, as a
// backward does) from what I kept, and frees that graph.
void backwardWeightsOnly(DeferredWeightGradients& deferred);

}  // namespace shardscope::engine
