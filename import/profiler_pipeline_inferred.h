// A pipeline rank whose schedule names none of its actions (PyTorch 2.11's Schedule1F1B records no
// span for a forward or a backward, only its sends and receives), its actions read from the order
// of what it ran in each step:
//   - forward: the training thread's operators outside autograd, the optimizer and c10d;
//   - backward: autograd's functions (autograd::engine::evaluate_function: ..., on any thread);
//   - a send or receive of c10d's, or a change from one to the other, ends an action.
// A run of operators is a forward only where one of its operators has a function among the step's
// backwards (aten::addmm for AddmmBackward0) and it begins before the step's last backward (not
// the schedule's own work: splitting the batch, shape inference's first exchange, scaling the
// gradients), and it is cut to those operators. Forwards beyond a step's backwards' count are the
// step's own work where they come before its first send or receive (the last stage's split of the
// target), and where they come before its first backward an evaluation's (schedule.eval() before
// the training step, in one optimizer window without prof.step()) or shape inference's (the stage
// run once on meta tensors, in the first step): the first forwards are left out. Every backward
// must run the same functions (one stage's graph); a step with no backward (an evaluation's that
// has a window of its own) has no actions.
// The forwards and the backwards are numbered 0, 1, ... in each step, as every single-stage
// schedule runs them. Where a step's do not pair up, at least two micro-batches, each action
// beside a send or receive, the rank is not read as a pipeline at all (nothing guessed): a
// data-parallel job accumulating micro-batches between one exchange a step, or a ring attention's
// one forward and backward around its transfers, reads as its sends and receives.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "config/pipeline_schedule.h"
#include "import/profiler_trace_index.h"

namespace shardscope::import {

// c10d's send or receive op, or a backend's span of one: what an action waits in.
bool isPointToPointName(std::string_view name);

struct InferredAction {
  config::PipeAction action;  // one stage a rank, as the schedules that name none: profiler::singleStageOf
  int64_t begin = 0, end = 0;
};

// The rank's actions as its order shows them, or none: no step trained, or one did not pair up.
std::vector<InferredAction> inferUnlabelledActions(const profiler::RankTrace& trace);

}  // namespace shardscope::import
