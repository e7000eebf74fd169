#include "engine/strategies/train_step.h"

#include <torch/csrc/autograd/autograd.h>

#include "engine/recording/recorder.h"
#include "engine/recording/recording_allocator.h"
#include "engine/launch/step_gate.h"

namespace shardscope::engine {

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

// A stage's own parameters that train, as the model computes with them.
std::vector<at::Tensor> trainedWeightsOf(const StagedModel& model, const Strategy& strategy, int unit) {
  std::vector<at::Tensor> weights;
  const auto& live = strategy.liveParameters();
  for (size_t i = 0; i < live.size(); ++i) {
    if (model.params()[i].unit == unit && live[i].requires_grad()) weights.push_back(live[i]);
  }
  return weights;
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
  StageActivations kept;
  at::Tensor loss = forwardStages(model, strategy, batch, at::Tensor(), checkpointBlocks, kept);
  backwardStages(model, strategy, batch, at::full_like(loss, lossScale), checkpointBlocks, kept, lastMicroBatch);
  return loss.detach();
}

// Activation checkpointing's recomputation of stage `s` before its backward: a forward span in the
// backward phase, with its unit gathered again.
void recompute(const StagedModel& model, Strategy& strategy, const Batch& batch, int s, StageActivations& kept) {
  const int unitOfStage = model.stageUnit(s);
  enterGroup(strategy, trace::GroupKind::Forward, "recompute", unitOfStage);
  RoleScope role(trace::MemoryRole::Activation);
  UnitScope unit(unitOfStage);
  ComputeSpan span(strategy.gate().recorder(), trace::ComputeKind::Forward, StagedModel::unitName(unitOfStage));
  kept.outputs[s] = model.recomputeStage(s, kept.inputs[s], batch, strategy.liveParameters());
}

}  // namespace

at::Tensor forwardStages(const StagedModel& model, Strategy& strategy, const Batch& batch, const at::Tensor& input,
                         bool checkpointBlocks, StageActivations& kept) {
  const int stages = model.numStages();
  RankRecorder& recorder = strategy.gate().recorder();
  auto checkpointed = [&](int s) { return checkpointBlocks && model.stageUnit(s) != config::kRootUnit; };
  kept.inputs.assign(stages, at::Tensor());
  kept.outputs.assign(stages, at::Tensor());
  kept.needsGrad.assign(stages, false);
  auto& inputs = kept.inputs;
  auto& outputs = kept.outputs;
  auto& needsGrad = kept.needsGrad;
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
      if (s > 0) {
        inputs[s] = outputs[s - 1].detach().requires_grad_(needsGrad[s - 1]);
      } else {
        inputs[s] = input.defined() ? input : inputOf(batch, strategy);
      }
      {
        // Checkpointed: no graph, nothing saved for backward but the input kept above.
        c10::AutoGradMode graph(!checkpointed(s) && at::GradMode::is_enabled());
        outputs[s] = model.forwardStage(s, inputs[s], batch, strategy.liveParameters());
      }
      needsGrad[s] = checkpointed(s) ? blockNeedsGrad(model, s, inputs[s]) : outputs[s].requires_grad();
    }
    strategy.afterForward(s);
  }
  return outputs.back();
}

at::Tensor backwardStages(const StagedModel& model, Strategy& strategy, const Batch& batch,
                          const at::Tensor& lastGradient, bool checkpointBlocks, StageActivations& kept,
                          bool lastMicroBatch) {
  const int stages = model.numStages();
  RankRecorder& recorder = strategy.gate().recorder();
  auto checkpointed = [&](int s) { return checkpointBlocks && model.stageUnit(s) != config::kRootUnit; };
  auto& inputs = kept.inputs;
  auto& outputs = kept.outputs;
  PhaseScope phase(trace::Phase::Backward);
  at::Tensor gradOutput = lastGradient;
  for (int s = stages - 1; s >= 0; --s) {
    strategy.beforeBackward(s);
    const int unitOfStage = model.stageUnit(s);
    if (checkpointed(s) && kept.needsGrad[s]) recompute(model, strategy, batch, s, kept);
    enterGroup(strategy, trace::GroupKind::Backward, "backward", unitOfStage);
    {
      RoleScope role(trace::MemoryRole::Activation);
      UnitScope unit(unitOfStage);  // its activation gradients, and the .grad autograd makes
      ComputeSpan span(recorder, trace::ComputeKind::Backward, StagedModel::unitName(unitOfStage));
      // A stage with nothing trainable in or before it (a frozen root under LoRA) has no backward.
      if (outputs[s].requires_grad() && gradOutput.defined()) {
        torch::autograd::backward({outputs[s]}, {gradOutput});
      }
      gradOutput = inputs[s].requires_grad() ? inputs[s].grad() : at::Tensor();
      outputs[s] = at::Tensor();  // drop this stage's graph and activations
      inputs[s] = at::Tensor();
    }
    retagGradients(model, strategy, s);
    strategy.afterBackward(s);
  }
  if (lastMicroBatch) strategy.finishBackward();
  return gradOutput;  // the gradient of the first stage's input, where it asked for one
}

at::Tensor backwardInputStages(const StagedModel& model, Strategy& strategy, const Batch& batch,
                               const at::Tensor& lastGradient, bool checkpointBlocks, StageActivations& kept) {
  const int stages = model.numStages();
  RankRecorder& recorder = strategy.gate().recorder();
  auto checkpointed = [&](int s) { return checkpointBlocks && model.stageUnit(s) != config::kRootUnit; };
  PhaseScope phase(trace::Phase::Backward);
  kept.outputGradients.assign(stages, at::Tensor());
  kept.deferred.assign(stages, nullptr);
  at::Tensor gradOutput = lastGradient;
  for (int s = stages - 1; s >= 0; --s) {
    strategy.beforeBackward(s);
    const int unitOfStage = model.stageUnit(s);
    if (checkpointed(s) && kept.needsGrad[s]) recompute(model, strategy, batch, s, kept);
    enterGroup(strategy, trace::GroupKind::Backward, "backward input", unitOfStage);
    {
      RoleScope role(trace::MemoryRole::Activation);
      UnitScope unit(unitOfStage);
      ComputeSpan span(recorder, trace::ComputeKind::Backward, StagedModel::unitName(unitOfStage));
      kept.outputGradients[s] = gradOutput;
      const bool flows = kept.outputs[s].requires_grad() && gradOutput.defined() && kept.inputs[s].requires_grad();
      gradOutput = flows ? backwardInputOnly(kept.outputs[s], gradOutput, kept.inputs[s],
                                             trainedWeightsOf(model, strategy, unitOfStage), kept.deferred[s])
                         : at::Tensor();
      if (kept.deferred[s]) {  // W starts from the nodes I kept (which hold what lies below them)
        kept.outputs[s] = kept.inputs[s] = kept.outputGradients[s] = at::Tensor();
      }
    }
    strategy.afterBackwardInput(s);
  }
  return gradOutput;
}

void backwardWeightStages(const StagedModel& model, Strategy& strategy, StageActivations& kept, bool lastMicroBatch) {
  RankRecorder& recorder = strategy.gate().recorder();
  PhaseScope phase(trace::Phase::Backward);
  for (int s = model.numStages() - 1; s >= 0; --s) {
    strategy.beforeBackward(s);
    const int unitOfStage = model.stageUnit(s);
    enterGroup(strategy, trace::GroupKind::Backward, "backward weight", unitOfStage);
    {
      RoleScope role(trace::MemoryRole::Activation);
      UnitScope unit(unitOfStage);
      ComputeSpan span(recorder, trace::ComputeKind::Backward, StagedModel::unitName(unitOfStage));
      if (kept.deferred[s]) {
        backwardWeightsOnly(*kept.deferred[s]);
        kept.deferred[s].reset();
      } else if (kept.outputs[s].requires_grad() && kept.outputGradients[s].defined()) {
        // Not split (the first stage's embedding: its input asks for no gradient): W is its backward.
        const auto weights = trainedWeightsOf(model, strategy, unitOfStage);
        if (!weights.empty()) {
          torch::autograd::backward({kept.outputs[s]}, {kept.outputGradients[s]}, /*retain_graph=*/false,
                                    /*create_graph=*/false, weights);
        }
      }
      kept.outputs[s] = at::Tensor();  // this stage's graph and activations go
      kept.inputs[s] = at::Tensor();
      kept.outputGradients[s] = at::Tensor();
    }
    retagGradients(model, strategy, s);
    strategy.afterBackward(s);
  }
  if (lastMicroBatch) strategy.finishBackward();
}

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

}  // namespace shardscope::engine
