// Adam and AdamW stepped with multi-tensor (_foreach_) kernels, as torch.optim does by default on
// CUDA. torch::optim's C++ Adam steps one tensor at a time: about seven kernels per parameter, so a
// model of ~150 parameter tensors pays ~1,000 kernel launches per step on the host, where PyTorch's
// foreach path launches a few dozen. The math is torch.optim's _multi_tensor_adam (lerp for the
// first moment, sqrt/div/add for the denominator, one addcdiv); the state is torch::optim's own
// AdamParamState / AdamWParamState, so everything that reads optimizer state reads it unchanged.
// Temporaries: the denominator for every tensor at once (the size of exp_avg_sq), as in PyTorch.
#pragma once

#include <torch/optim.h>

namespace shardscope {

class ForeachAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

class ForeachAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace shardscope
