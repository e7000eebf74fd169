#include "engine/strategies/optimizer_factory.h"

#include "engine/strategies/foreach_adam.h"
#include "engine/recording/recording_allocator.h"

namespace shardscope::engine {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const config::RunConfig& config,
                                                       std::vector<at::Tensor> params) {
  if (config.optimizer == config::OptimizerKind::Sgd) {
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(config.lr));
  }
  // torch.optim's default: the multi-tensor path for parameters on CUDA, one tensor at a time on
  // the CPU, which is where --offload cpu's shards are, on a GPU rank too.
  const bool foreach = config.device == config::DeviceKind::Cuda && config.offload == config::Offload::Off;
  if (config.optimizer == config::OptimizerKind::AdamW) {
    auto options = torch::optim::AdamWOptions(config.lr).weight_decay(0.01);
    if (foreach) return std::make_unique<ForeachAdamW>(params, options);
    return std::make_unique<torch::optim::AdamW>(params, options);
  }
  auto options = torch::optim::AdamOptions(config.lr);
  if (foreach) return std::make_unique<ForeachAdam>(params, options);
  return std::make_unique<torch::optim::Adam>(params, options);
}

namespace {

// One parameter's state tensors by name (some may be undefined: amsgrad's max without amsgrad).
std::vector<std::pair<const char*, at::Tensor>> namedState(const torch::optim::OptimizerParamState* state) {
  if (auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(state)) {
    return {
        {"exp_avg", adam->exp_avg()}, {"exp_avg_sq", adam->exp_avg_sq()}, {"max_exp_avg_sq", adam->max_exp_avg_sq()}};
  }
  if (auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(state)) {
    return {{"exp_avg", adamw->exp_avg()},
            {"exp_avg_sq", adamw->exp_avg_sq()},
            {"max_exp_avg_sq", adamw->max_exp_avg_sq()}};
  }
  if (auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(state)) {
    return {{"momentum_buffer", sgd->momentum_buffer()}};
  }
  return {};
}

}  // namespace

std::vector<HeldTensor> optimizerStateTensors(const torch::optim::Optimizer& optimizer, bool inHostMemory) {
  std::vector<HeldTensor> out;
  int index = 0;
  for (const auto& [key, state] : optimizer.state()) {
    const std::string name = "state." + std::to_string(index++);
    for (const auto& [field, t] : namedState(state.get())) {
      if (!t.defined()) continue;
      out.push_back({name + "." + field, trace::MemoryRole::OptimizerState, t.numel(),
                     static_cast<int64_t>(t.storage().nbytes()), inHostMemory});
    }
  }
  return out;
}

void assignOptimizerStateToUnits(const torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& params,
                                 const std::vector<int32_t>& units) {
  const auto& states = optimizer.state();
  for (size_t i = 0; i < params.size() && i < units.size(); ++i) {
    // torch::optim keys a parameter's state by its TensorImpl's address.
    auto it = states.find(params[i].unsafeGetTensorImpl());
    if (it == states.end()) continue;
    for (const auto& [field, t] : namedState(it->second.get())) assignUnit(t, units[i]);
  }
}

}  // namespace shardscope::engine
