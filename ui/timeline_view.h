// The timeline of one session: a lane group per rank on the shared time axis, each lane drawn by
// its own drawer on one shared geometry (timeline_lanes.h).
//   memory   stacked area by role (bytes allocated), the total as a line, the peak as a dashed line
//   compute  forward/backward spans per unit, optimizer steps
//   comm     collectives as labelled blocks (op, unit or bucket, size); a red bar beneath where
//            they ran with no forward or backward compute (exposed communication)
//   steps    vertical markers at each step start
//   pauses   where the ranks waited at the step gate (--step-gate), shaded across the rank
//   playhead a vertical line across every rank (playhead.h); the time ruler places it
// Drawing is two-pass per lane (after Tracy): binary-search the visible window, then fold whatever
// is narrower than a few pixels into one "N items" block; the memory area is reduced to one column
// per pixel (the column's maximum). So the cost follows the window's width, not the event count.
#pragma once

#include <set>
#include <string>

#include <imgui.h>

#include "trace/run_recording.h"
#include "ui/memory_at.h"
#include "ui/time_axis.h"
#include "ui/timeline_style.h"

namespace shardscope::ui {

// The stragglers view's waits of one session (SessionWaits, timeline_style.h), from its recording.
SessionWaits sessionWaits(const trace::RunRecording& recording);

// Draws the session's ranks into the current window at the cursor position, `width` wide.
// memoryScaleBytes: the top of every memory lane (shared across sessions for comparison).
// Past kRanksUnfolded ranks the rows fold into groups (ui/rank_rows.h); `expandedRankGroups` holds
// the groups shown rank by rank, and a click on a group's label toggles it there (null: folded,
// not clickable). Returns the height used.
float drawTimeline(const char* id, const trace::RunRecording& recording, TimeAxis& axis, double memoryScaleBytes,
                   float width, const TimelineStyle& style, CollectiveSelection& selection, TimelineCursor& cursor,
                   TimelineFrameStats* stats = nullptr, double playheadNs = -1,
                   std::set<int>* expandedRankGroups = nullptr);

// --offload cpu: a rank's host memory gets a lane under its device memory lane, this share of its
// height, on a scale of its own (the highest host peak of any rank, with a margin).
constexpr float kHostLaneShare = 0.5f;
bool recordsHostMemory(const trace::RunRecording& recording);
// Whether any rank recorded a memory sample (a PyTorch job traced without profile_memory has none).
bool recordsMemory(const trace::RunRecording& recording);
float hostLaneHeight(const trace::RunRecording& recording, const TimelineStyle& style);  // 0 without
double hostMemoryScaleBytes(const trace::RunRecording& recording);

}  // namespace shardscope::ui
