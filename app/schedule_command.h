// run --print-schedule: a pipeline's plan, printed before anything runs.
#pragma once

#include "config/run_config.h"

namespace shardscope::app {

// Prints the split of the blocks over the stages, then each rank's stages and actions in the
// order it runs them (torch.distributed.pipelining's notation), then the bubble's share as the
// schedule's closed form and as its plan lays out with a backward twice a forward (predictions,
// so labelled). Returns the exit status: 2, said on stderr, without --pp.
int printPipelineSchedule(const config::RunConfig& config);

// What a --pp run prints before it trains: the schedule, the (pp, dp, tp) mesh, and which blocks
// each stage holds on which ranks.
void printPipelinePlan(const config::RunConfig& config);

}  // namespace shardscope::app
