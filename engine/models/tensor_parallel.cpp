#include "engine/models/tensor_parallel.h"

#include <cstdint>

#include <torch/autograd.h>

#include "engine/models/tensor_group_handle.h"
#include "engine/recording/recorder.h"

namespace shardscope::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The sum lands in a buffer of its own, recorded as a communication buffer: Gloo's worker thread
// holds it a while after wait() returns, past the point where nothing else does (once the bias is
// added, a new tensor), and an activation it is not (counted as one, a b x s x h buffer would stay
// in the activation lane for as long as Gloo happens to hold it). See Note [staging buffers] in
// engine/recording/recorder.h.
at::Tensor summedOverGroup(const at::Tensor& x, Communicator& group, const std::string& label) {
  at::Tensor sum;
  {
    RoleScope role(trace::MemoryRole::CommBuffer);
    sum = x.contiguous().clone();
  }
  group.allReduceSumAsync(sum, label)->wait();
  return sum;
}

struct CopyToTensorGroup : torch::autograd::Function<CopyToTensorGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group, const std::string& label) {
    ctx->saved_data["group"] = group;
    ctx->saved_data["label"] = label;
    return x.view_as(x);  // a new node for autograd; no copy
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::string label = ctx->saved_data["label"].toStringRef();
    return {summedOverGroup(grads[0], savedGroup(ctx), label), at::Tensor(), at::Tensor()};
  }
};

struct ReduceFromTensorGroup : torch::autograd::Function<ReduceFromTensorGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group, const std::string& label) {
    return summedOverGroup(x, groupOfHandle(group), label);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

// The dimension a split divides, and into how many equal blocks before dividing each (qkv: 3).
int splitDim(config::TensorSplit split) { return split == config::TensorSplit::Rows ? 1 : 0; }
int splitBlocks(config::TensorSplit split) { return split == config::TensorSplit::FusedColumns3 ? 3 : 1; }

}  // namespace

at::Tensor tensorSlice(const at::Tensor& full, config::TensorSplit split, int parts, int index) {
  if (split == config::TensorSplit::Replicated || parts <= 1) return full;
  const int dim = splitDim(split);
  std::vector<at::Tensor> pieces;
  for (const auto& block : full.chunk(splitBlocks(split), dim)) {
    const int64_t each = block.size(dim) / parts;
    pieces.push_back(block.narrow(dim, index * each, each));
  }
  return at::cat(pieces, dim).contiguous();
}

at::Tensor joinTensorSlices(const std::vector<at::Tensor>& slices, config::TensorSplit split) {
  if (split == config::TensorSplit::Replicated || slices.size() <= 1) return slices.front();
  const int dim = splitDim(split), blocks = splitBlocks(split);
  std::vector<at::Tensor> pieces;
  for (int b = 0; b < blocks; ++b) {
    for (const auto& slice : slices) pieces.push_back(slice.chunk(blocks, dim)[b]);
  }
  return at::cat(pieces, dim);
}

at::Tensor copyToTensorGroup(const at::Tensor& x, Communicator* group, const std::string& label) {
  if (!group) return x;
  return CopyToTensorGroup::apply(x, groupHandle(group), label);
}

at::Tensor reduceFromTensorGroup(const at::Tensor& x, Communicator* group, const std::string& label) {
  if (!group) return x;
  return ReduceFromTensorGroup::apply(x, groupHandle(group), label);
}

std::map<std::string, at::Tensor> joinTensorParallel(const std::map<std::string, at::Tensor>& local,
                                                     const std::map<std::string, config::TensorSplit>& splits,
                                                     const TensorParallelPart& part) {
  if (!part.group) return local;
  // The slices are host copies; NCCL gathers device tensors only (it refuses a host tensor with
  // "Tensors must be CUDA and dense"). The joined parameter comes back to the host.
  const auto stream = part.group->collectiveStream();
  const at::Device where = stream ? stream->device() : at::Device(at::kCPU);
  std::map<std::string, at::Tensor> full;
  for (const auto& [name, slice] : local) {
    const auto it = splits.find(name);
    const config::TensorSplit split = it == splits.end() ? config::TensorSplit::Replicated : it->second;
    if (split == config::TensorSplit::Replicated) {
      full[name] = slice;
      continue;
    }
    at::Tensor in = slice.to(where).contiguous();
    at::Tensor gathered = at::empty({part.ranks * in.numel()}, in.options());
    part.group->allGather(gathered, in, "export " + name);
    std::vector<at::Tensor> slices;
    for (const auto& piece : gathered.chunk(part.ranks)) slices.push_back(piece.view(in.sizes()));
    full[name] = joinTensorSlices(slices, split).to(slice.device()).contiguous();
  }
  return full;
}

}  // namespace shardscope::engine
