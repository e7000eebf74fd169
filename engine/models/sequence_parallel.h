// Sequence parallelism (--sequence-parallel, with --tp), as Megatron-LM (Korthikanti et al. 2022)
// and PyTorch's SequenceParallel: what lies between a row-parallel linear and the next
// column-parallel one (the residual stream, the LayerNorms, the embedding's output) is split along
// the sequence, dim 1 of B x T x H, each rank of the tensor group keeping T/N tokens. Tensor
// parallelism's all-reduces become an all-gather before a column-parallel linear and a
// reduce-scatter after a row-parallel one, which send the same bytes, and no activation is whole.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/models/tensor_parallel.h"

namespace shardscope::engine {

// This rank's T/N tokens of x (whole on every rank: the embedding's output). Backward: the
// gradient all-gathered, so that every rank's embedding gets the whole sequence's gradient.
at::Tensor scatterToSequence(const at::Tensor& x, const TensorParallelPart& part, const std::string& label);
// The whole sequence from every rank's tokens (before the LM head, which is whole). Backward: this
// rank's tokens of the gradient, the same on every rank (what follows is replicated).
at::Tensor gatherFromSequence(const at::Tensor& x, const TensorParallelPart& part, const std::string& label);
// A column-parallel linear on a sequence-split input: x all-gathered, times this rank's slice.
// Megatron's way: only x's own tokens are saved, all-gathered again in backward, so the gathered
// input is never an activation; the input's gradient is reduce-scattered back to the tokens.
at::Tensor gatheredLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                          const TensorParallelPart& part, const std::string& label);
// A row-parallel linear's partial products summed over the group and split along the sequence
// (one reduce-scatter). Backward: the gradient all-gathered.
at::Tensor reduceScatterToSequence(const at::Tensor& partial, const TensorParallelPart& part, const std::string& label);
// Replicated parameters applied to a rank's part only: under --sequence-parallel the LayerNorms and
// the row-parallel biases to its tokens; under LoRA the whole half of an adapter to its slice of a
// split linear. Forward themselves, backward their gradients summed over the group in one
// all-reduce (each rank's covers its part), as Megatron all-reduces its sequence-parallel
// parameters' gradients.
std::vector<at::Tensor> sharedAcrossTensorGroup(const std::vector<at::Tensor>& params, const TensorParallelPart& part,
                                                const std::string& label);

}  // namespace shardscope::engine
