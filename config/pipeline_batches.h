// Which of a pipeline's sends go with the receive after them as one batch, where the backend
// batches point-to-point (NCCL's ncclGroupStart/End, as torch.distributed's batch_isend_irecv):
// 1F1B's steady state sends an activation and receives a gradient at once. A batch ends only when
// the peer has posted the receive for its send and the send for its receive, so a pair is batched
// only where every rank's list still runs to its end: the interleaved and zero-bubble lists would
// otherwise wait on each other.
#pragma once

#include <vector>

#include "config/pipeline_schedule.h"

namespace shardscope::config {

// Whether `action` is a send and `next` a receive (a pair that could go as one batch).
bool sendThenReceive(const PipeAction& action, const PipeAction& next);

// Per rank, per index of its list (rankActions): whether the action there and the next go as one
// batch. Every pair sendThenReceive names, less those that would leave a rank waiting forever
// (found by walking the lists with a batch's rule, one pair given up at a time).
std::vector<std::vector<bool>> batchedTransfers(const PipelineShape& shape);

}  // namespace shardscope::config
