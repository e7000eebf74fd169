// A pipeline rank whose schedule names none of its actions (PyTorch 2.11's Schedule1F1B records no
// span for a forward or a backward, only its sends and receives), its actions read from the order
// of what it ran in each step:
//   - forward: the training thread's operators outside autograd and the optimizer;
//   - backward: autograd's functions (autograd::engine::evaluate_function: ..., on any thread);
//   - a send or receive of c10d's, or a change from one to the other, ends an action.
// The backwards are numbered 0, 1, ... in each step, as every single-stage schedule runs them. A
// run of operators is a forward only where one of its operators has a function among the step's
// backwards (aten::addmm for AddmmBackward0) and it begins before the step's last backward: the
// schedule's own work (splitting the batch, shape inference's first exchange, scaling the
// gradients) is not, and a step's first forwards beyond its backwards' count are shape inference's
// (the first step runs the stage once on meta tensors). Every backward must run the same functions (one stage's graph,
// each micro-batch). Where that leaves every step with as many forwards as backwards, they are its micro-batches;
// otherwise the rank is not read as a pipeline at all (nothing guessed): a job that sends between halves of its forward
// (a ring attention's) reads as its sends and receives.
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

// The rank's actions as its order shows them, or none: it sent or received nothing in a step, or a
// step's forwards and backwards did not pair up.
std::vector<InferredAction> inferUnlabelledActions(const profiler::RankTrace& trace);

}  // namespace shardscope::import
