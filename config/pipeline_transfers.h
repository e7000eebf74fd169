// Each rank's list of a pipeline schedule with its transfers: the sends and receives of
// activations and of their gradients between stages on different ranks, none between two stages
// on the same rank. A send sits just after the action that made it. A receive is posted where it
// sits and waited for just before the action that needs it (engine/strategies/pipeline_rank.h).
//
// GPipe's and 1F1B's receives sit just before the action that needs them, as PyTorch's one-stage
// schedules post theirs. The multi-stage schedules' (interleaved_1f1b, zero_bubble, zbv, dualpipev) sit where
// PyTorch's lowering of a compute-only schedule puts them (_PipelineScheduleRuntime's
// _add_send_recv): it walks every rank's list in lockstep and, when a rank runs a compute action
// whose output another rank needs, puts its send after it and the matching receive at the end of
// the receiver's list at that same moment. Each transfer so takes one place in one global order,
// on both of its ranks, and however each rank's transfers wait for their peers' (NCCL runs two
// ranks' transfers one after another, each waiting for the other's), no rank waits forever.
//
// The walk's moments are PyTorch's: its lists also hold the actions it adds for FSDP (UNSHARD and
// RESHARD of up to 3 stages ahead) and REDUCE_GRAD after each stage's last backward, each a
// moment in the walk though it waits for nothing; they run nothing here (each stage's strategy
// gathers and reduces its own), but they are counted, so the transfers land where PyTorch's do
// (tests/pytorch_pipeline_orders.py compares the two).
#pragma once

#include <string>
#include <vector>

#include "config/pipeline_schedule.h"

namespace shardscope::config {

// The compute actions of `rank` (computeActions) with its transfers, in the order it runs them.
std::vector<PipeAction> rankActions(const PipelineShape& shape, int rank);
// Every rank's, by rank: the multi-stage schedules' from one walk (asking rankActions for each
// rank walks them all P times).
std::vector<std::vector<PipeAction>> everyRanksActions(const PipelineShape& shape);

// Every rank's list, one line per rank, for --print-schedule.
std::string scheduleText(const PipelineShape& shape);

}  // namespace shardscope::config
