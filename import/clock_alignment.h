// Ranks of a job recorded on several hosts, put on rank 0's clock (torch.profiler traces:
// import/profiler_trace.h). See Note [clock alignment] in trace/rank_clock.h.
#pragma once

#include <string>
#include <vector>

#include "trace/events.h"
#include "trace/rank_clock.h"

namespace shardscope::import {

// Moves each rank's events onto rank 0's clock where its own reads otherwise: from the collectives
// it ran with a rank already placed (their ends, which happen together on every member), else from
// the messages it exchanged with one. `clocks` gets a line per moved rank; `rankClocks` each moved
// rank's reading (the summary's "clocks"), empty when none moved.
// worldCollectivesKnown false: the world's collectives hide sub-groups' (a Gloo trace of a job with
// sub-groups), and are not paired.
void alignRankClocks(std::vector<std::vector<trace::Event>>& ranks, std::string& clocks,
                     std::vector<trace::RankClock>& rankClocks, bool worldCollectivesKnown = true);

}  // namespace shardscope::import
