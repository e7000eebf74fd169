// A pipeline run's lanes on the timeline (--pp), under each rank's comm lane, on the lanes' shared
// geometry (timeline_lanes.h):
//   actions  the schedule's compute actions as the rank ran them, read back from its recording
//            (stats/pipeline_actions.h): each a cell from its event group to the next, coloured by
//            micro-batch (a backward darker, a W lighter), labelled as the schedule names it
//            ("1F3") where it fits
//   held     which micro-batches' activations the rank holds over time: a band per micro-batch,
//            in its action cells' colour, stacked on one scale for every rank (GPipe's climb to M
//            against 1F1B's cap at P, at a glance); hovered, what each one's forwards left held
// The Schedule tab draws one step of the same against the plan; these run the whole recording.
#pragma once

#include <map>
#include <set>
#include <utility>
#include <vector>

#include <imgui.h>

#include "config/pipeline_schedule.h"
#include "stats/pipeline_actions.h"
#include "ui/session_store.h"
#include "ui/timeline_lanes.h"

namespace shardscope::ui {

// One hue per micro-batch (cycling past ten); a backward darker than its forward, W lighter; a
// planned cell fainter. Shared with the Schedule tab.
ImU32 actionColor(const config::PipeAction& action, bool planned = false);

// A session's actions and activations held per rank, read once per store version.
struct PipelineLanes {
  std::vector<std::vector<stats::MeasuredAction>> actions;
  std::vector<std::vector<stats::HeldAt>> held;
  int most = 0;   // the most micro-batches any of its ranks held
  int scale = 0;  // the held lanes' top: the most of every session shown, to compare them by height
};

// Every session's lanes' scale set to the most any of them held (a GPipe run's M beside a 1F1B
// run's P reads as a taller lane, not as two full ones).
void shareHeldScale(std::vector<PipelineLanes>& sessions);

// Empty (no ranks) where the session ran no pipeline.
PipelineLanes pipelineLanesOf(const Session& session);

// The rank's action cells over [y, y + height). Returns the cells drawn.
int drawActionLane(const LaneFrame& f, const std::vector<stats::MeasuredAction>& actions, float y, float height);

// The rank's activations held over [y, y + height), `scale` micro-batches at the top. Returns the
// steps drawn.
int drawHeldLane(const LaneFrame& f, const std::vector<stats::HeldAt>& held, int scale, float y, float height);

// Who holds what's cell of a pipeline rank from a to b: a box per micro-batch, filled in its colour
// where the rank holds its activations (on any of its stages), an outline where not, and the bytes
// their forwards left held (`held`: (stage, micro-batch) -> bytes, stats::activationBytesHeldAt);
// hovered, which and how much each.
void drawHeldMicroBatches(ImDrawList* dl, ImVec2 a, ImVec2 b, const std::map<std::pair<int, int>, int64_t>& held,
                          int microBatches, int rank);

}  // namespace shardscope::ui
