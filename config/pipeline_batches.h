// Which of a pipeline's sends go with the receive after them as one batch, where the backend
// batches point-to-point (NCCL's ncclGroupStart/End, as torch.distributed's batch_isend_irecv).
// On NCCL the transfers between two ranks run one after another on one stream, each waiting for its
// peer's: in 1F1B's steady state each of two neighbours sends first (an activation one way, a
// gradient the other), and without a batch each would wait for the other's receive forever. As
// torch.distributed.pipelining's one-stage schedules do (their forward sends and backward receives
// in one batch), every send right before a receive in 1F1B's and GPipe's lists goes with it. The
// multi-stage schedules' runtime issues each transfer alone, and so does this: their lists' order
// (config/pipeline_transfers.h) needs no batch.
#pragma once

#include <vector>

#include "config/pipeline_transfers.h"

namespace shardscope::config {

// Whether `action` is a send and `next` a receive (a pair that could go as one batch).
bool sendThenReceive(const PipeAction& action, const PipeAction& next);

// Per rank, per index of its list (rankActions): whether the action there and the next go as one
// batch.
std::vector<std::vector<bool>> batchedTransfers(const PipelineShape& shape);

}  // namespace shardscope::config
