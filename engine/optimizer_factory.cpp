#include "engine/optimizer_factory.h"

#include "engine/foreach_adam.h"

namespace shardscope {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const RunConfig& config,
                                                       std::vector<at::Tensor> params) {
  if (config.optimizer == "sgd") {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(config.lr));
  }
  // torch.optim's default: the multi-tensor path on CUDA, one tensor at a time on CPU.
  const bool foreach = config.device == "cuda";
  if (config.optimizer == "adamw") {
    auto options = torch::optim::AdamWOptions(config.lr).weight_decay(0.01);
    if (foreach) return std::make_unique<ForeachAdamW>(params, options);
    return std::make_unique<torch::optim::AdamW>(params, options);
  }
  auto options = torch::optim::AdamOptions(config.lr);
  if (foreach) return std::make_unique<ForeachAdam>(params, options);
  return std::make_unique<torch::optim::Adam>(params, options);
}

namespace {
void addState(std::vector<HeldTensor>& out, const std::string& name, const at::Tensor& t) {
  if (!t.defined()) return;
  out.push_back({name, "optimizer_state", t.numel(),
                 static_cast<int64_t>(t.storage().nbytes())});
}
}  // namespace

std::vector<HeldTensor> optimizerStateTensors(const torch::optim::Optimizer& optimizer) {
  std::vector<HeldTensor> out;
  int index = 0;
  for (const auto& [key, state] : optimizer.state()) {
    const std::string name = "state." + std::to_string(index++);
    if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(state.get())) {
      addState(out, name + ".exp_avg", adam->exp_avg());
      addState(out, name + ".exp_avg_sq", adam->exp_avg_sq());
      addState(out, name + ".max_exp_avg_sq", adam->max_exp_avg_sq());
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      addState(out, name + ".exp_avg", adamw->exp_avg());
      addState(out, name + ".exp_avg_sq", adamw->exp_avg_sq());
      addState(out, name + ".max_exp_avg_sq", adamw->max_exp_avg_sq());
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      addState(out, name + ".momentum_buffer", sgd->momentum_buffer());
    }
  }
  return out;
}

}  // namespace shardscope
