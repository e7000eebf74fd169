// One training step of a rank: forward stage by stage, backward stage by stage in reverse, with the
// strategy acting at each boundary, then the optimizer. Each stage's input is a detached leaf, so
// the backward of stage s ends exactly where stage s-1's begins (where FSDP's hooks would fire).
#pragma once

#include <ATen/ATen.h>

#include "engine/model.h"
#include "engine/strategy.h"

namespace shardscope {

// Returns this rank's loss (mean over its local batch), detached. With `microBatches` > 1 the
// batch is split into that many equal micro-batches, each loss scaled by 1/microBatches (as
// `(loss / K).backward()`), and gradients are reduced only after the last (Strategy::setGradientSync).
at::Tensor trainStep(const StagedModel& model, Strategy& strategy, const Batch& batch, int microBatches = 1);

}  // namespace shardscope
