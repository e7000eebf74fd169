// Adam and AdamW stepped with multi-tensor (_foreach_) kernels, as torch.optim does by default on
// CUDA. torch::optim's C++ Adam steps one tensor at a time, eight kernels per parameter: ~1,200
// launches per step for a model of ~150 parameter tensors, where PyTorch's foreach path launches
// a few dozen. The math is torch.optim's _multi_tensor_adam (lerp for the first moment,
// sqrt/div/add for the denominator, one addcdiv); the state is torch::optim's own AdamParamState /
// AdamWParamState, so everything that reads optimizer state reads it unchanged.
// Temporaries: the denominators, made for up to 64 MiB of tensors at a time (or one larger
// tensor). PyTorch makes them for every tensor at once, 4 bytes per parameter, which for DDP would
// lift the step above the backward peak; sliced, the step adds about what the per-tensor loop does.
#pragma once

#include <torch/optim.h>

namespace shardscope::engine {

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

}  // namespace shardscope::engine
