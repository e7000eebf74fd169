// Which role an allocation in a torch.profiler trace plays, from the spans in force on its thread
// when it happened (the ops and annotations around it, innermost first): the first span a rule
// below names decides. What no span names is "other". The rules follow how FSDP2 and DDP annotate
// their work (torch/distributed/fsdp/_fully_shard, torch/nn/parallel/distributed.py):
//   gloo:* / nccl:*                           comm_buffer     (the backend's staging buffers)
//   ...AccumulateGrad                         grad_full       (a parameter's .grad)
//   FSDP::all_gather_copy_out (i)             param_gathered  (unit i's unsharded parameters)
//   FSDP::all_gather (i)                      comm_buffer     (the all-gather's flat output)
//   FSDP::post_backward_reduce (i)            comm_buffer     (the reduce-scatter's buffers)
//   FSDP::post_backward_accumulate (i)        grad_shard
//   Optimizer.step#...                        optimizer_state (moments and their temporaries)
//   Optimizer.zero_grad#...                   grad_full
//   autograd::engine::evaluate_function: ...  activation      (activation gradients in backward)
//   DistributedDataParallel.forward,
//   FSDP::pre_forward / post_forward, forward activation
// and, named by none of them, on the training thread inside a step before its Optimizer.step
// (forward, loss and backward, which FSDP2 leaves unannotated): activation.
#pragma once

#include <string>
#include <vector>

#include "trace/events.h"

namespace shardscope::trace {

MemoryRole profilerAllocationRole(const std::vector<const std::string*>& spansInnermostFirst,
                                  bool inForwardOrBackward);

// The unit FSDP2's annotation names ("FSDP::all_gather (2)" -> "2"), or "" for none.
std::string fsdpUnitOf(const std::string& annotation);

}  // namespace shardscope::trace
