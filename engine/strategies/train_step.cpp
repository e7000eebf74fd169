#include "engine/strategies/train_step.h"

#include <torch/csrc/autograd/autograd.h>

#include "engine/recording/recorder.h"
#include "engine/recording/recording_allocator.h"
#include "engine/launch/step_gate.h"

namespace shardscope {

namespace {

void enterGroup(const Strategy& strategy, trace::GroupKind kind, const std::string& what, int unit) {
  strategy.gate().enter(kind, what + " " + StagedModel::unitName(unit));
}

// Gradients are allocated by autograd while the role is "activation"; once a stage's backward has
// produced them, the parameters' .grad buffers are known to be unsharded gradients.
void retagGradients(const StagedModel& model, const Strategy& strategy, int stage) {
  const int unit = model.stageUnit(stage);
  const auto& live = strategy.liveParameters();
  for (size_t i = 0; i < live.size(); ++i) {
    if (model.params()[i].unit == unit) retagStorage(live[i].grad(), trace::MemoryRole::GradFull);
  }
}

// Float inputs enter in the dtype the parameters compute in (bf16 under mixed precision).
at::Tensor inputOf(const Batch& batch, const Strategy& strategy) {
  const auto dtype = strategy.liveParameters().front().scalar_type();
  if (!batch.x.is_floating_point() || batch.x.scalar_type() == dtype) return batch.x;
  return batch.x.to(dtype);
}

// Whether a block stage's output needs a gradient, decided without a graph (a checkpointed forward
// builds none): something in the block or before it trains. Every parameter of a block's unit is
// used by its one stage, so this is what autograd would decide.
bool blockNeedsGrad(const StagedModel& model, int stage, const at::Tensor& input) {
  if (input.requires_grad()) return true;
  const int unit = model.stageUnit(stage);
  for (const auto& spec : model.params()) {
    if (spec.unit == unit && spec.trainable) return true;
  }
  return false;
}

// Forward and backward of one (micro-)batch; the backward seeds the loss's gradient with
// `lossScale`. Returns the (unscaled) loss, detached.
at::Tensor forwardBackward(const StagedModel& model, Strategy& strategy, const Batch& batch, double lossScale,
                           bool lastMicroBatch, bool checkpointBlocks) {
  const int stages = model.numStages();
  RankRecorder& recorder = strategy.gate().recorder();
  auto checkpointed = [&](int s) { return checkpointBlocks && model.stageUnit(s) != kRootUnit; };
  std::vector<at::Tensor> inputs(stages), outputs(stages);
  std::vector<bool> needsGrad(stages, false);
  {
    PhaseScope phase(trace::Phase::Forward);
    for (int s = 0; s < stages; ++s) {
      strategy.beforeForward(s);
      enterGroup(strategy, trace::GroupKind::Forward, "forward", model.stageUnit(s));
      {
        RoleScope role(trace::MemoryRole::Activation);
        UnitScope unit(model.stageUnit(s));  // its activations
        ComputeSpan span(recorder, trace::ComputeKind::Forward, StagedModel::unitName(model.stageUnit(s)));
        // A stage's input asks for a gradient only if something before it trains: under LoRA the
        // frozen embedding gets none, as autograd would decide in one unbroken graph.
        inputs[s] = s == 0 ? inputOf(batch, strategy) : outputs[s - 1].detach().requires_grad_(needsGrad[s - 1]);
        {
          // Checkpointed: no graph, nothing saved for backward but the input kept above.
          c10::AutoGradMode graph(!checkpointed(s) && at::GradMode::is_enabled());
          outputs[s] = model.forwardStage(s, inputs[s], batch, strategy.liveParameters());
        }
        needsGrad[s] = checkpointed(s) ? blockNeedsGrad(model, s, inputs[s]) : outputs[s].requires_grad();
      }
      strategy.afterForward(s);
    }
  }
  at::Tensor loss = outputs.back().detach();
  {
    PhaseScope phase(trace::Phase::Backward);
    at::Tensor gradOutput;
    for (int s = stages - 1; s >= 0; --s) {
      strategy.beforeBackward(s);
      const int unitOfStage = model.stageUnit(s);
      if (checkpointed(s) && needsGrad[s]) {
        // The recomputation: a forward span in the backward phase, with its unit gathered again.
        enterGroup(strategy, trace::GroupKind::Forward, "recompute", unitOfStage);
        RoleScope role(trace::MemoryRole::Activation);
        UnitScope unit(unitOfStage);
        ComputeSpan span(recorder, trace::ComputeKind::Forward, StagedModel::unitName(unitOfStage));
        outputs[s] = model.recomputeStage(s, inputs[s], batch, strategy.liveParameters());
      }
      enterGroup(strategy, trace::GroupKind::Backward, "backward", unitOfStage);
      {
        RoleScope role(trace::MemoryRole::Activation);
        UnitScope unit(unitOfStage);  // its activation gradients, and the .grad autograd makes
        ComputeSpan span(recorder, trace::ComputeKind::Backward, StagedModel::unitName(unitOfStage));
        // d(loss * scale)/d(loss): `(loss / K).backward()` under gradient accumulation, else 1.
        if (s == stages - 1) gradOutput = at::full_like(outputs.back(), lossScale);
        // A stage with nothing trainable in or before it (a frozen root under LoRA) has no backward.
        if (outputs[s].requires_grad() && gradOutput.defined()) {
          torch::autograd::backward({outputs[s]}, {gradOutput});
        }
        gradOutput = s > 0 && inputs[s].requires_grad() ? inputs[s].grad() : at::Tensor();
        outputs[s] = at::Tensor();  // drop this stage's graph and activations
        inputs[s] = at::Tensor();
      }
      retagGradients(model, strategy, s);
      strategy.afterBackward(s);
    }
    if (lastMicroBatch) strategy.finishBackward();
  }
  return loss;
}

}  // namespace

at::Tensor trainStep(const StagedModel& model, Strategy& strategy, const Batch& batch, const StepOptions& options) {
  const int microBatches = options.microBatches;
  TORCH_CHECK(microBatches >= 1 && batch.x.size(0) % microBatches == 0, "trainStep: ", microBatches,
              " micro-batches do not split a batch of ", batch.x.size(0), " rows evenly");
  StepGate& gate = strategy.gate();
  StepGate::Armed gateArmed(gate);
  gate.enter(trace::GroupKind::StepStart, "step start");
  ComputeSpan stepSpan(gate.recorder(), trace::ComputeKind::Step, "");
  const int64_t rows = batch.x.size(0) / microBatches;
  at::Tensor total;
  for (int k = 0; k < microBatches; ++k) {
    const bool last = k == microBatches - 1;
    strategy.setGradientSync(last);
    gate.recorder().setMicroBatch(microBatches == 1 ? 0 : k + 1);
    const Batch micro =
        microBatches == 1 ? batch : Batch{batch.x.narrow(0, k * rows, rows), batch.y.narrow(0, k * rows, rows)};
    at::Tensor loss = forwardBackward(model, strategy, micro, 1.0 / microBatches, last, options.checkpointBlocks);
    total = total.defined() ? total + loss : loss;
  }
  gate.recorder().setMicroBatch(0);  // the optimizer steps once, after every micro-batch
  {
    PhaseScope phase(trace::Phase::Optimizer);
    gate.enter(trace::GroupKind::Optimizer, "optimizer step");
    RoleScope role(trace::MemoryRole::OptimizerState);
    ComputeSpan span(gate.recorder(), trace::ComputeKind::Optimizer, "");
    strategy.step();
  }
  return microBatches == 1 ? total : total / microBatches;
}

}  // namespace shardscope
