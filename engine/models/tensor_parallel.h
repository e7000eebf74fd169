// The tensors of tensor parallelism (--tp): a rank's slice of a parameter, the slices joined back,
// and the two autograd functions Megatron-LM calls f and g, through which a column-parallel and a
// row-parallel linear talk over the tensor group. The splits themselves are config/tensor_parallel.h's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "config/tensor_parallel.h"
#include "engine/comm/communicator.h"

namespace shardscope::engine {

// Where this rank sits in its tensor group, and the group a model's all-reduces run in.
struct TensorParallelPart {
  int ranks = 1;                  // N: 1 without --tp (and in single-process training)
  int index = 0;                  // this rank's place among them
  Communicator* group = nullptr;  // null when ranks is 1
};

// Part `index` of `parts` of a full parameter, as `split` divides it (a copy, contiguous).
at::Tensor tensorSlice(const at::Tensor& full, config::TensorSplit split, int parts, int index);
// The full parameter from its parts in group order: tensorSlice's inverse.
at::Tensor joinTensorSlices(const std::vector<at::Tensor>& slices, config::TensorSplit split);

// f: the input of a column-parallel linear. Forward: x itself. Backward: the gradient summed over
// the group (each rank's slice of the outputs contributes part of x's gradient). `label` names the
// collective in the recording (the layer it feeds). Returns x when `group` is null.
at::Tensor copyToTensorGroup(const at::Tensor& x, Communicator* group, const std::string& label);
// g: the output of a row-parallel linear. Forward: the partial products summed over the group.
// Backward: the gradient itself. Returns x when `group` is null.
at::Tensor reduceFromTensorGroup(const at::Tensor& x, Communicator* group, const std::string& label);

// Full parameters by name from every rank's slices (a collective over `part.group`: every rank of it
// calls this with the same names), each split one all-gathered and joined; `splits` by name.
std::map<std::string, at::Tensor> joinTensorParallel(const std::map<std::string, at::Tensor>& local,
                                                     const std::map<std::string, config::TensorSplit>& splits,
                                                     const TensorParallelPart& part);

}  // namespace shardscope::engine
