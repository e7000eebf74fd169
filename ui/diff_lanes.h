// A diff session's marks on B's timeline (DiffOverlay, timeline_style.h), each on the lanes'
// shared geometry (timeline_lanes.h), with A drawn on B's axis lined up by step
// (ui/diff_alignment.h):
//   ghost       A's total memory as an outline over B's stack, on the same scale
//   difference  in place of B's stack, B - A per column: up (magenta) where B holds more, down
//               (blue) where it holds less, on a scale of its own
//   marks       B's collectives whose change passed the gate (stats/run_diff.h), outlined with a
//               notch: magenta, up, where slower or larger; blue, down, where faster or smaller;
//               with the change where it fits
#pragma once

#include <vector>

#include "stats/run_diff.h"
#include "trace/run_recording.h"
#include "ui/timeline_lanes.h"
#include "ui/timeline_style.h"

namespace shardscope::ui {

// The outline of A's rank's total memory over B's memory lane [y, y + height), `scaleBytes` its
// top. Returns the columns drawn.
int drawMemoryGhost(const LaneFrame& f, const trace::RankTimeline& a, const DiffOverlay& diff, float y, float height,
                    double scaleBytes, const TimelineStyle& style);

// B - A of the rank's total memory, over the lane [y, y + height). Returns the columns drawn.
int drawMemoryDifference(const LaneFrame& f, const trace::RankTimeline& a, const trace::RankTimeline& b,
                         const DiffOverlay& diff, float y, float height, const TimelineStyle& style);

// The rank's marked collectives over its comm lane [y, y + height); hovering one says its change.
// Returns how many were in view.
int drawDiffMarks(const LaneFrame& f, const std::vector<stats::DiffMark>& marks, int rank, float y, float height);

}  // namespace shardscope::ui
