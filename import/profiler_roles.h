// Which role an allocation in a torch.profiler trace plays, from the spans in force on its thread
// when it happened (the ops and annotations around it, innermost first): the first span a rule
// below names decides. What no span names is "other". The rules follow how FSDP2 and DDP annotate
// their work (torch/distributed/fsdp/_fully_shard, torch/nn/parallel/distributed.py):
//   gloo:* / nccl:*                           comm_buffer     (the backend's staging buffers; not
//                                                             once its op returned: the caller's)
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

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/events.h"

namespace shardscope::import {

trace::MemoryRole profilerAllocationRole(const std::vector<const std::string*>& spansInnermostFirst,
                                         bool inForwardOrBackward);

// One frame of a stack a CUDA memory snapshot recorded: a C++ function (its demangled name) or a
// Python one (its name and file).
struct StackFrame {
  std::string_view name, file;
};

// The same roles for an allocation in a CUDA memory snapshot, from the stack where it was made,
// innermost frame first: the first frame a rule below names decides. The rules are the table
// above by the functions FSDP2, DDP and the optimizers run inside those annotations (PyTorch
// 2.11's torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py and _fsdp_param_group.py):
//   at::cuda::setWorkspaceForHandle,
//   at::cuda::getCUDABlasLtWorkspace       other           (cuBLAS's workspace: 32 MiB per handle on
//                                                          Hopper, made by a rank's first matmul on
//                                                          each thread and kept, not an activation)
//   c10d::... / gloo::... / nccl...        comm_buffer     (process groups, DDP's Reducer buckets)
//   ...AccumulateGrad...                   grad_full
//   foreach_all_gather_copy_out            param_gathered
//   foreach_all_gather, unshard (FSDP)     comm_buffer
//   foreach_reduce (FSDP)                  comm_buffer
//   zero_grad in torch/optim/              grad_full
//   anything else in torch/optim/          optimizer_state
//   torch::autograd::Engine::evaluate_function
//                                          activation      (activation gradients in backward)
//   forward in torch/nn/parallel/distributed.py, pre_forward / post_forward (FSDP),
//   _call_impl in torch/nn/modules/module.py
//                                          activation
// and, named by none, `inForwardOrBackward` (the time is inside a step before its optimizer step,
// on the training thread's clock): activation; else other.
trace::MemoryRole snapshotAllocationRole(const std::vector<StackFrame>& stackInnermostFirst, bool inForwardOrBackward);
// The role the first frame that names one names, or none (then the time decides, as above).
std::optional<trace::MemoryRole> stackNamedRole(const std::vector<StackFrame>& stackInnermostFirst);

// Whether the stack ran `function` (a Python frame's name, or part of a C++ frame's), in a file whose
// path holds `fileHint` ("" for any).
bool stackRuns(const std::vector<StackFrame>& stack, std::string_view function, std::string_view fileHint = "");

// The unit FSDP2's annotation names ("FSDP::all_gather (2)" -> "2"), or "" for none.
std::string fsdpUnitOf(const std::string& annotation);

}  // namespace shardscope::import
