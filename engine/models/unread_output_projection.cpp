#include "engine/models/unread_output_projection.h"

#include <torch/autograd.h>

namespace shardscope::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct UnreadOutputProjection : torch::autograd::Function<UnreadOutputProjection> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& residual, const at::Tensor& x,
                            const at::Tensor& weight, const at::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = bias.defined();
    // One element expanded to the output's shape: nothing of the size of an activation is allocated.
    return at::zeros({1}, residual.options()).expand(residual.sizes());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const int64_t in = weight.size(1), out = weight.size(0);
    // As linear's backward on the flattened rows (AddmmBackward): d x = g W, d W = g^T x, d b = sum g.
    const at::Tensor g = grads[0].reshape({-1, out});
    const at::Tensor rows = x.reshape({-1, in});
    // Only what autograd asks for (a frozen weight gets no product).
    at::Tensor dx = ctx->needs_input_grad(1) ? g.mm(weight).view(x.sizes()) : at::Tensor();
    at::Tensor dWeight = ctx->needs_input_grad(2) ? g.t().mm(rows) : at::Tensor();
    at::Tensor dBias = ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(3) ? g.sum(0) : at::Tensor();
    return {grads[0], dx, dWeight, dBias};
  }
};

}  // namespace

at::Tensor unreadOutputProjection(const at::Tensor& residual, const at::Tensor& x, const at::Tensor& weight,
                                  const at::Tensor& bias) {
  return UnreadOutputProjection::apply(residual, x, weight, bias);
}

}  // namespace shardscope::engine
