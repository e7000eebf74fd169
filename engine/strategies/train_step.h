// One training step of a rank: forward stage by stage, backward stage by stage in reverse, with the
// strategy acting at each boundary, then the optimizer. Each stage's input is a detached leaf, so
// the backward of stage s ends exactly where stage s-1's begins (where FSDP's hooks would fire).
#pragma once

#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "engine/models/model.h"
#include "engine/strategies/split_backward.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

struct StepOptions {
  // > 1: the batch is split into that many equal micro-batches, each loss scaled by 1/microBatches
  // (as `(loss / K).backward()`), and gradients are reduced only after the last
  // (Strategy::setGradientSync).
  int microBatches = 1;
  // Activation checkpointing of every block (the root's stages are not): a block's forward runs
  // without a graph and keeps only its input; its backward first runs the forward again, with
  // one, as checkpoint_wrapper does. Same numbers, less activation memory, one more forward.
  bool checkpointBlocks = false;
};

// What a forward keeps for its backward: each model stage's input and output (with its graph),
// and whether the output asks for a gradient.
struct StageActivations {
  std::vector<at::Tensor> inputs, outputs;
  std::vector<bool> needsGrad;
  // Between a split backward's I and its W: per stage, what W starts from (or, where the backward
  // could not be split, the gradient of its output, for a whole backward from `outputs`).
  std::vector<std::shared_ptr<DeferredWeightGradients>> deferred;
  std::vector<at::Tensor> outputGradients;
};

// The forward of every stage of `model` from `input` (undefined: the batch's own input), the
// strategy acting at each boundary; returns the last stage's output (the loss, when the model ends
// in one) with its graph, keeping what the backward needs in `kept`.
at::Tensor forwardStages(const StagedModel& model, Strategy& strategy, const Batch& batch, const at::Tensor& input,
                         bool checkpointBlocks, StageActivations& kept);
// The backward of those stages in reverse from `lastGradient` (the gradient of the last output),
// freeing what `kept` held; with `lastMicroBatch`, the strategy's finishBackward after. Returns
// the gradient of the first stage's input where it asked for one (a pipeline stage's received
// activation), else an undefined tensor.
at::Tensor backwardStages(const StagedModel& model, Strategy& strategy, const Batch& batch,
                          const at::Tensor& lastGradient, bool checkpointBlocks, StageActivations& kept,
                          bool lastMicroBatch);

// Zero bubble's backward in two (split_backward.h): I, the gradient of the first stage's input
// alone, returned (the stage before waits for it), keeping for each stage the graph its weights'
// gradients need and the gradients that reached it; then W, each stage's weights' gradients from
// there, the strategy acting at each boundary as after a whole backward, freeing `kept`.
at::Tensor backwardInputStages(const StagedModel& model, Strategy& strategy, const Batch& batch,
                               const at::Tensor& lastGradient, bool checkpointBlocks, StageActivations& kept);
void backwardWeightStages(const StagedModel& model, Strategy& strategy, StageActivations& kept, bool lastMicroBatch);

// Returns this rank's loss (mean over its local batch), detached.
at::Tensor trainStep(const StagedModel& model, Strategy& strategy, const Batch& batch, const StepOptions& options = {});

}  // namespace shardscope::engine
