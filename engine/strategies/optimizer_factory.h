// torch::optim optimizers from the run's --optimizer/--lr, plus a listing of their state tensors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/optim.h>

#include "config/run_config.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

// sgd: plain SGD; adam: Adam (betas 0.9/0.999, eps 1e-8); adamw: AdamW (weight decay 0.01),
// matching torch.optim's defaults, including its choice of implementation: Adam/AdamW step with
// multi-tensor kernels on CUDA (engine/strategies/foreach_adam.h) and one tensor at a time on CPU.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const config::RunConfig& config, std::vector<at::Tensor> params);

// The optimizer's state tensors as held tensors (role optimizer_state).
// `inHostMemory`: the state is a GPU rank's host memory (--offload cpu).
std::vector<HeldTensor> optimizerStateTensors(const torch::optim::Optimizer& optimizer, bool inHostMemory = false);

// Counts the state of params[i] in model unit units[i] ("who holds what"): torch::optim makes its
// state lazily inside the first step, where no unit is in force.
void assignOptimizerStateToUnits(const torch::optim::Optimizer& optimizer, const std::vector<at::Tensor>& params,
                                 const std::vector<int32_t>& units);

}  // namespace shardscope::engine
