#include "engine/strategies/foreach_adam.h"

#include <cmath>
#include <vector>

namespace shardscope::engine {

namespace {

constexpr int64_t kSliceBytes = int64_t{64} << 20;
using StateMap = ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>;

// One step over one parameter group. Decoupled: AdamW's weight decay (shrink the parameters)
// rather than Adam's (add to the gradients).
template <typename State, typename Options>
void stepGroup(torch::optim::OptimizerParamGroup& group, StateMap& states, bool decoupled) {
  auto& options = static_cast<Options&>(group.options());
  TORCH_CHECK(!options.amsgrad(), "the foreach Adam path does not implement amsgrad");
  const auto [beta1, beta2] = options.betas();
  std::vector<at::Tensor> params, grads, expAvgs, expAvgSqs;
  std::vector<at::Scalar> stepSizes, biasCorrection2Sqrt;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
    auto it = states.find(p.unsafeGetTensorImpl());
    if (it == states.end()) {
      auto fresh = std::make_unique<State>();
      fresh->step(0);
      fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
      fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
      it = states.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
    }
    auto& state = static_cast<State&>(*it->second);
    state.step(state.step() + 1);
    const double biasCorrection1 = 1.0 - std::pow(beta1, static_cast<double>(state.step()));
    const double biasCorrection2 = 1.0 - std::pow(beta2, static_cast<double>(state.step()));
    params.push_back(p);
    grads.push_back(p.grad());
    expAvgs.push_back(state.exp_avg());
    expAvgSqs.push_back(state.exp_avg_sq());
    stepSizes.emplace_back(-options.lr() / biasCorrection1);
    biasCorrection2Sqrt.emplace_back(std::sqrt(biasCorrection2));
  }
  if (params.empty()) return;
  if (options.weight_decay() != 0 && decoupled) {
    at::_foreach_mul_(params, 1.0 - options.lr() * options.weight_decay());
  }
  // Slices of at most kSliceBytes (or one larger tensor): the denominators' size (see the header).
  for (size_t begin = 0; begin < params.size();) {
    size_t end = begin;
    int64_t bytes = 0;
    auto sizeOf = [&](size_t i) { return static_cast<int64_t>(params[i].nbytes()); };
    while (end < params.size() && (end == begin || bytes + sizeOf(end) <= kSliceBytes)) {
      bytes += sizeOf(end);
      ++end;
    }
    auto slice = [&](auto& list) { return at::ArrayRef(list).slice(begin, end - begin); };
    std::vector<at::Tensor> sliceGrads = slice(grads).vec();
    if (options.weight_decay() != 0 && !decoupled) {
      sliceGrads = at::_foreach_add(sliceGrads, slice(params), options.weight_decay());
    }
    at::_foreach_lerp_(slice(expAvgs), sliceGrads, 1.0 - beta1);
    at::_foreach_mul_(slice(expAvgSqs), beta2);
    at::_foreach_addcmul_(slice(expAvgSqs), sliceGrads, sliceGrads, 1.0 - beta2);
    auto denominators = at::_foreach_sqrt(slice(expAvgSqs));
    at::_foreach_div_(denominators, slice(biasCorrection2Sqrt));
    at::_foreach_add_(denominators, options.eps());
    at::_foreach_addcdiv_(slice(params), slice(expAvgs), denominators, slice(stepSizes));
    begin = end;
  }
}

template <typename State, typename Options>
torch::Tensor stepAll(std::vector<torch::optim::OptimizerParamGroup>& groups, StateMap& states, bool decoupled,
                      const torch::optim::Optimizer::LossClosure& closure) {
  torch::NoGradGuard noGrad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enableGrad(true);
    loss = closure();
  }
  for (auto& group : groups) stepGroup<State, Options>(group, states, decoupled);
  return loss;
}

}  // namespace

torch::Tensor ForeachAdam::step(LossClosure closure) {
  return stepAll<torch::optim::AdamParamState, torch::optim::AdamOptions>(param_groups_, state_, /*decoupled=*/false,
                                                                          closure);
}

torch::Tensor ForeachAdamW::step(LossClosure closure) {
  return stepAll<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(param_groups_, state_, /*decoupled=*/true,
                                                                            closure);
}

}  // namespace shardscope::engine
