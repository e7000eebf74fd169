// The lanes of a rank's timeline, each drawn by its own function on one shared geometry (LaneFrame:
// where the time axis lies on screen, which slice of the run is visible, where the mouse is). A
// lane is a horizontal band [y, y + height) across that axis; drawTimeline (timeline_view.h)
// stacks them per rank. A new lane is one more drawer here and one line there.
//   memory    stacked area by role, one column per pixel (the column's maximum), total and peak
//   host      the same for a GPU rank's host memory under --offload cpu, on its own scale
//   spans     compute or collectives: culled to the window, what is under a few pixels folded;
//             --offload cpu's host<->device copies in the compute lane's lower third (they run on
//             the communication stream, beside compute)
//   exposed   a red bar where collectives ran with no compute beside them
//   pauses    waits at the step gate, shaded over the span lanes
//   steps     a marker at each step start across the rank's lanes
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <imgui.h>

#include "trace/run_recording.h"
#include "ui/time_axis.h"
#include "ui/timeline_style.h"

namespace shardscope::ui {

struct LaneFrame {
  ImDrawList* drawList = nullptr;
  const TimeAxis* axis = nullptr;
  float x0 = 0;         // where the time axis starts on screen, after the label column
  float width = 0;      // its width in pixels
  double originNs = 0;  // where the axis counts from: the run's origin, later by shiftNs
  double shiftNs = 0;   // the run drawn this much earlier (a diff's A, ui/diff_alignment.h)
  double beginAbs = 0;  // the visible window in absolute ns (the events' own clock)
  double endAbs = 0;
  ImVec2 mouse;
  bool windowHovered = false;

  float toX(double absNs) const { return static_cast<float>(axis->toX(absNs - originNs, x0, width)); }
  double toAbsNs(float x) const { return originNs + axis->toNs(x, x0, width); }
  double clockOriginNs() const { return originNs - shiftNs; }                 // the run's own origin
  double ownNs(float x) const { return axis->toNs(x, x0, width) + shiftNs; }  // from the run's origin
  // The same axis, for another run drawn beside this one (a diff's A on B's lanes).
  LaneFrame forRun(double runOriginNs, double runShiftNs) const;
  bool mouseIn(float y, float height) const {
    return windowHovered && mouse.x >= x0 && mouse.x < x0 + width && mouse.y >= y && mouse.y < y + height;
  }
};

// The lane's memory columns for this frame (ui/memory_columns.h): kept from the last frame where
// nothing changed (not copied), or found into `found` when nothing keeps them.
const std::vector<size_t>& laneColumns(const LaneFrame& f, const trace::RoleTrack& samples,
                                       const trace::RangeMax& totals, const TimelineStyle& style,
                                       std::vector<size_t>& found);

// A memory lane's pixels per byte, `scaleBytes` at its top (a few pixels under its edge).
double laneScale(float height, double scaleBytes);

// Ticks and labels above the lanes, with faint lines down to `bottom`.
void drawTimeRuler(const LaneFrame& frame, float y, float bottom);

// The rank's memory by role. `scaleBytes` is the lane's top. Returns the columns drawn.
int drawMemoryLane(const LaneFrame& frame, const trace::RankTimeline& rank, float y, float height, double scaleBytes,
                   const TimelineStyle& style);

// The rank's host memory under --offload cpu, by role, on its own scale (`scaleBytes`).
int drawHostMemoryLane(const LaneFrame& frame, const trace::RankTimeline& rank, float y, float height,
                       double scaleBytes, const TimelineStyle& style);

// Hovering a memory lane (the device's or the host's): the exact bytes per role at that time, and
// the cursor set to it.
void drawMemoryHover(const LaneFrame& frame, const trace::RunRecording& recording, int rank, float y, float height,
                     TimelineCursor& cursor, trace::MemorySpace space = trace::MemorySpace::Device);

enum class SpanLaneKind { Compute, Collectives };

// The compute spans or collectives of a rank. Clicking a collective selects it (every rank's
// matching one is outlined). Counts what it drew and folded into `stats`.
void drawSpanLane(const LaneFrame& frame, const trace::RankTimeline& rank, SpanLaneKind kind, float y,
                  const TimelineStyle& style, CollectiveSelection& selection, TimelineFrameStats& stats);

// Exposed communication (RunRecording::exposedComm) as a thin red bar at `y`.
void drawExposedCommLane(const LaneFrame& frame, const std::vector<std::pair<int64_t, int64_t>>& exposed, float y);

// The stragglers view over a rank's comm lane [y, y + height): where it waited for a collective's
// last member, hatched (from its own issue to the last's); where it was that last member, past the
// noise floor, a red mark at its issue. `waits` sorted by issue time.
void drawWaitLane(const LaneFrame& frame, const std::vector<stats::CollectiveWait>& waits, int64_t longestNs, int rank,
                  float y, float height, TimelineFrameStats& stats);

// Waits at the step gate: a shaded, labelled band over [y, y + height).
void drawPauses(const LaneFrame& frame, const std::vector<trace::GroupSpan>& pauses, float y, float height);

// A marker and "sN" label at each step start, over [y, y + height).
void drawStepMarkers(const LaneFrame& frame, const std::vector<trace::Event>& steps, float y, float height);

// The playhead across [y, y + height), at `playheadNs` from the run's own origin (drawn shiftNs
// earlier), if it is in view.
void drawPlayhead(const LaneFrame& frame, double playheadNs, float y, float height);

}  // namespace shardscope::ui
