// One training step of a rank: forward stage by stage, backward stage by stage in reverse, with the
// strategy acting at each boundary, then the optimizer. Each stage's input is a detached leaf, so
// the backward of stage s ends exactly where stage s-1's begins (where FSDP's hooks would fire).
#pragma once

#include <ATen/ATen.h>

#include "engine/models/model.h"
#include "engine/strategies/strategy.h"

namespace shardscope {

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

// Returns this rank's loss (mean over its local batch), detached.
at::Tensor trainStep(const StagedModel& model, Strategy& strategy, const Batch& batch, const StepOptions& options = {});

}  // namespace shardscope
