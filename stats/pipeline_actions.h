// The schedule's actions as a pipeline rank ran them (--pp), read back from its recording: each
// action opened an event group named as the schedule names it ("1F3"), so an action lasts from its
// group to the next action's (or to the optimizer), and its compute time is the forward and
// backward running within. The schedule view draws them against the plan; the plan's durations
// are their means.
#pragma once

#include <cstdint>
#include <map>
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
  // Where its compute began: after what it waited for first (its receive, posted earlier, is
  // waited for inside its span); beginNs where it computed nothing.
  int64_t computeBeginNs = 0;
};

// Every action of the rank's recorded steps, in time order (compute actions and transfers alike).
std::vector<MeasuredAction> measuredActions(const trace::RankTimeline& timeline);

// Which micro-batches' activations the rank holds (config::HeldActivations), from the end of each
// of its compute actions on: a step line over its whole recording, each micro-batch apart.
struct HeldMicroBatch {
  int microBatch = 0;
  int64_t bytes = 0;  // what its forwards on the rank's stages still held left held (activationBytesLeft)
};
struct HeldAt {
  int64_t ns = 0;
  int microBatches = 0;
  std::vector<HeldMicroBatch> batches;  // ascending; bytes 0 where no timeline was given or no memory recorded
};
std::vector<HeldAt> activationsHeld(const std::vector<MeasuredAction>& actions,
                                    const trace::RankTimeline* timeline = nullptr);
// The (stage, micro-batch) pairs whose activations the rank holds at `ns` (absolute): its step's
// compute actions ended by then, walked from the step's first.
std::set<std::pair<int, int>> activationsHeldAt(const std::vector<MeasuredAction>& actions, int64_t ns);

// What a forward action left held: the activation role's bytes when it ended less when it began,
// as the rank's allocator counted them (a rank runs one action at a time, so what its forward
// allocated and kept is that micro-batch's, on that stage); 0 for any other action, or where the
// rank recorded no memory.
int64_t activationBytesLeft(const trace::RankTimeline& timeline, const MeasuredAction& action);
// For each (stage, micro-batch) whose activations the rank holds at `ns` (activationsHeldAt), what
// its forward left held (activationBytesLeft).
std::map<std::pair<int, int>, int64_t> activationBytesHeldAt(const trace::RankTimeline& timeline,
                                                             const std::vector<MeasuredAction>& actions, int64_t ns);
// Per micro-batch (0 .. M - 1), what its forwards left held on the rank (over the rank's stages), the
// mean over the steps after the first (all where one); empty where no forward was measured.
std::vector<double> activationBytesByMicroBatch(const trace::RankTimeline& timeline,
                                                const std::vector<MeasuredAction>& actions);

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
