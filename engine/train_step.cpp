#include "engine/train_step.h"

#include <torch/csrc/autograd/autograd.h>

namespace shardscope {

at::Tensor trainStep(const StagedModel& model, Strategy& strategy, const Batch& batch) {
  const int stages = model.numStages();
  std::vector<at::Tensor> inputs(stages), outputs(stages);
  for (int s = 0; s < stages; ++s) {
    strategy.beforeForward(s);
    inputs[s] = s == 0 ? batch.x : outputs[s - 1].detach().requires_grad_(true);
    outputs[s] = model.forwardStage(s, inputs[s], batch, strategy.liveParameters());
    strategy.afterForward(s);
  }
  at::Tensor loss = outputs.back().detach();

  at::Tensor gradOutput = at::ones_like(outputs.back());
  for (int s = stages - 1; s >= 0; --s) {
    strategy.beforeBackward(s);
    torch::autograd::backward({outputs[s]}, {gradOutput});
    if (s > 0) gradOutput = inputs[s].grad();
    outputs[s] = at::Tensor();  // drop this stage's graph and activations
    inputs[s] = at::Tensor();
    strategy.afterBackward(s);
  }
  strategy.finishBackward();
  strategy.step();
  return loss;
}

}  // namespace shardscope
