#include "engine/models/sequence_parallel.h"

#include "engine/models/tensor_group_handle.h"
#include "engine/recording/recorder.h"

namespace shardscope::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The group's pieces travel flat in rank order; the sequence dimension is dim 1. The flat buffers a
// collective reads or writes are communication buffers, not activations: Gloo's worker holds them
// a moment after wait() (Note [staging buffers] in engine/recording/recorder.h).
at::Tensor allGatheredSequence(const at::Tensor& x, Communicator& group, const std::string& label) {
  at::Tensor in = x.contiguous(), gathered;
  {
    RoleScope role(trace::MemoryRole::CommBuffer);
    gathered = at::empty({group.worldSize() * in.numel()}, in.options());
  }
  group.allGather(gathered, in, label);
  std::vector<at::Tensor> pieces;
  for (const auto& piece : gathered.chunk(group.worldSize())) pieces.push_back(piece.view(in.sizes()));
  return at::cat(pieces, 1);
}

at::Tensor reduceScatteredSequence(const at::Tensor& x, Communicator& group, const std::string& label) {
  const int n = group.worldSize();
  at::Tensor byRank, mine;
  {
    RoleScope role(trace::MemoryRole::CommBuffer);
    byRank = at::cat(x.chunk(n, 1), 0).view({-1});  // rank r's tokens of every sample, r-th
    mine = at::empty({byRank.numel() / n}, x.options());
  }
  group.reduceScatterSum(mine, byRank, label);
  auto shape = x.sizes().vec();
  shape[1] /= n;
  return mine.view(shape);
}

// A column-parallel linear's whole input, gathered for its product (in forward, and again in
// backward): it lives only for that product, a communication buffer, not an activation.
at::Tensor gatheredInput(const at::Tensor& x, Communicator& group, const std::string& label) {
  RoleScope role(trace::MemoryRole::CommBuffer);
  return allGatheredSequence(x, group, label);
}

at::Tensor tokensOf(const at::Tensor& x, int ranks, int index) {
  const int64_t each = x.size(1) / ranks;
  return x.narrow(1, index * each, each).clone(at::MemoryFormat::Contiguous);
}

void saveGroup(AutogradContext* ctx, int64_t group, const std::string& label) {
  ctx->saved_data["group"] = group;
  ctx->saved_data["label"] = label;
}
std::string savedLabel(AutogradContext* ctx) { return ctx->saved_data["label"].toStringRef(); }

struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group, const std::string& label) {
    saveGroup(ctx, group, label);
    return tokensOf(x, groupOfHandle(group).worldSize(), groupOfHandle(group).rank());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {allGatheredSequence(grads[0], savedGroup(ctx), savedLabel(ctx)), at::Tensor(), at::Tensor()};
  }
};

struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group, const std::string& label) {
    saveGroup(ctx, group, label);
    return allGatheredSequence(x, groupOfHandle(group), label);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    Communicator& group = savedGroup(ctx);
    return {tokensOf(grads[0], group.worldSize(), group.rank()), at::Tensor(), at::Tensor()};
  }
};

struct ReduceScatterToSequence : torch::autograd::Function<ReduceScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t group, const std::string& label) {
    saveGroup(ctx, group, label);
    return reduceScatteredSequence(x, groupOfHandle(group), label);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {allGatheredSequence(grads[0], savedGroup(ctx), savedLabel(ctx)), at::Tensor(), at::Tensor()};
  }
};

struct GatheredLinear : torch::autograd::Function<GatheredLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, int64_t group, const std::string& label) {
    saveGroup(ctx, group, label);
    ctx->saved_data["bias"] = bias.has_value() && bias->defined();
    ctx->save_for_backward({x, weight});
    const at::Tensor gathered = gatheredInput(x, groupOfHandle(group), label);
    return at::linear(gathered, weight, bias.has_value() ? *bias : at::Tensor());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1], &g = grads[0];
    Communicator& group = savedGroup(ctx);
    const at::Tensor gathered = gatheredInput(x, group, savedLabel(ctx));
    // linear's own backward, on the gathered input: the products autograd would compute.
    at::Tensor gradInput = reduceScatteredSequence(g.matmul(weight), group, savedLabel(ctx));
    at::Tensor gradWeight = g.reshape({-1, g.size(-1)}).t().mm(gathered.reshape({-1, gathered.size(-1)}));
    at::Tensor gradBias = ctx->saved_data["bias"].toBool() ? g.sum(at::IntArrayRef{0, 1}) : at::Tensor();
    return {gradInput, gradWeight, gradBias, at::Tensor(), at::Tensor()};
  }
};

struct SharedAcrossTensorGroup : torch::autograd::Function<SharedAcrossTensorGroup> {
  static variable_list forward(AutogradContext* ctx, at::TensorList params, int64_t group, const std::string& label) {
    saveGroup(ctx, group, label);
    variable_list out;
    for (const auto& p : params) out.push_back(p.view_as(p));  // new autograd nodes; no copy
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor flat;
    {
      RoleScope role(trace::MemoryRole::CommBuffer);
      std::vector<at::Tensor> pieces;
      for (const auto& g : grads) pieces.push_back(g.reshape({-1}));
      flat = at::cat(pieces);
    }
    savedGroup(ctx).allReduceSumAsync(flat, savedLabel(ctx))->wait();
    variable_list out;
    int64_t at = 0;
    for (const auto& g : grads) {
      out.push_back(flat.narrow(0, at, g.numel()).view_as(g).clone());
      at += g.numel();
    }
    out.emplace_back();
    out.emplace_back();
    return out;
  }
};

}  // namespace

at::Tensor scatterToSequence(const at::Tensor& x, const TensorParallelPart& part, const std::string& label) {
  return part.group ? ScatterToSequence::apply(x, groupHandle(part.group), label) : x;
}

at::Tensor gatherFromSequence(const at::Tensor& x, const TensorParallelPart& part, const std::string& label) {
  return part.group ? GatherFromSequence::apply(x, groupHandle(part.group), label) : x;
}

at::Tensor gatheredLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                          const TensorParallelPart& part, const std::string& label) {
  if (!part.group) return at::linear(x, weight, bias);
  std::optional<at::Tensor> maybeBias;
  if (bias.defined()) maybeBias = bias;
  return GatheredLinear::apply(x, weight, maybeBias, groupHandle(part.group), label);
}

at::Tensor reduceScatterToSequence(const at::Tensor& partial, const TensorParallelPart& part,
                                   const std::string& label) {
  return part.group ? ReduceScatterToSequence::apply(partial, groupHandle(part.group), label) : partial;
}

std::vector<at::Tensor> sharedAcrossTensorGroup(const std::vector<at::Tensor>& params, const TensorParallelPart& part,
                                                const std::string& label) {
  if (!part.group) return params;
  return SharedAcrossTensorGroup::apply(at::TensorList(params), groupHandle(part.group), label);
}

}  // namespace shardscope::engine
