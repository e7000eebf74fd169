// The schedule's actions as a pipeline rank ran them (--pp), read back from its recording: each
// action opened an event group named as the schedule names it ("1F3"), so an action lasts from its
// group to the next action's (or to the optimizer), and its compute time is the forward and
// backward running within. The schedule view draws them against the plan; the plan's durations
// are their means.
#pragma once

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "config/pipeline_schedule.h"
#include "trace/run_recording.h"

namespace shardscope::stats {

struct MeasuredAction {
  config::PipeAction action;
  int32_t step = -1;
  int64_t beginNs = 0;
  int64_t endNs = 0;      // where the next action (or the optimizer) began
  int64_t computeNs = 0;  // of [beginNs, endNs), forward or backward running
};

// Every action of the rank's recorded steps, in time order (compute actions and transfers alike).
std::vector<MeasuredAction> measuredActions(const trace::RankTimeline& timeline);

// How many micro-batches' activations the rank holds (config::HeldActivations), from the end of
// each of its compute actions on: a step line over its whole recording.
struct HeldAt {
  int64_t ns = 0;
  int microBatches = 0;
};
std::vector<HeldAt> activationsHeld(const std::vector<MeasuredAction>& actions);
// The (stage, micro-batch) pairs whose activations the rank holds at `ns` (absolute): its step's
// compute actions ended by then, walked from the step's first.
std::set<std::pair<int, int>> activationsHeldAt(const std::vector<MeasuredAction>& actions, int64_t ns);

// The mean compute time of F, B, I and W over `ranks`' steps after the first (all if one), in
// seconds; nothing when no compute action was measured. A kind never run keeps the plan's default
// ratio to F (B twice F, I and W one F each).
std::optional<config::ActionDurations> meanActionSeconds(const std::vector<std::vector<MeasuredAction>>& ranks);

// The bubble of each rank of a plan (config::plannedTimeline): the planned step (the last action's
// end, plannedStep) less the rank's own compute, in the plan's unit, and as a share of that step.
struct PlannedBubble {
  double seconds = 0;
  double share = 0;
};
using Plan = std::vector<std::vector<config::PlannedAction>>;
double plannedStep(const Plan& plan);
std::vector<PlannedBubble> plannedBubbles(const Plan& plan);

}  // namespace shardscope::stats
