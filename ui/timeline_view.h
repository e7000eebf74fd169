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

#include "stats/stragglers.h"
#include "trace/format.h"
#include "trace/run_recording.h"
#include "ui/time_axis.h"

namespace shardscope::ui {

// Which collective the user clicked; the matching collective on every rank is highlighted.
struct CollectiveSelection {
  bool active = false;
  int op = 0;
  int step = -1;
  std::string unit;
  int phase = 0;    // forward and backward all-gathers of one unit differ only here
  int microBatch = 0;  // under gradient accumulation a unit is gathered once per micro-batch
};

// The stragglers view's data for one session: per rank, each collective it met, sorted by when it
// issued it, and the longest any rank waited (how far back a visible wait can start).
struct SessionWaits {
  std::vector<std::vector<CollectiveWait>> byRank;
  int64_t longestNs = 0;
};
SessionWaits sessionWaits(const trace::RunRecording& recording);

struct TimelineStyle {
  float memoryLaneHeight = 70.0f;
  float spanLaneHeight = 18.0f;
  float foldPixels = 3.0f;  // spans narrower than this fold into one block
  // The device lanes (allocator cache, CUDA/NCCL runtime) start hidden: on a GPU the runtime alone
  // can dwarf the tensors whose sharding the timeline is about. Ticking them rescales the lanes.
  bool showRole[trace::kMemoryRoleCount] = {true, true, true, true, true,
                                           true, true, true, false, false};
  double capacityBytes = 0;  // one device's memory (--gpu-memory): a line in the memory lanes; 0: none
  // The stragglers view (W): each collective's last rank marked, the others' wait hatched; null: off.
  const SessionWaits* waits = nullptr;
};

// What the user points at, for the breakdown panel: a time and a rank.
struct TimelineCursor {
  bool valid = false;
  double tNs = 0;  // relative to the session's origin
  int rank = 0;
  bool seek = false;  // the user clicked or dragged on the time ruler: move the playhead to seekNs
  double seekNs = 0;
};

struct TimelineFrameStats {
  int spansDrawn = 0;
  int spansFolded = 0;
  int memoryColumns = 0;
  int spansHighlighted = 0;  // drawn spans matching the selected collective
  int rowsDrawn = 0;         // rank rows in the visible part of the window (ui/rank_rows.h)
  int waitsHatched = 0;      // stragglers view: waits drawn hatched
  int lastMarks = 0;         // and collectives marked as this rank's, issued clearly last
};

// Draws the session's ranks into the current window at the cursor position, `width` wide.
// memoryScaleBytes: the top of every memory lane (shared across sessions for comparison).
// Past kRanksUnfolded ranks the rows fold into groups (ui/rank_rows.h); `expandedRankGroups` holds
// the groups shown rank by rank, and a click on a group's label toggles it there (null: folded,
// not clickable). Returns the height used.
float drawTimeline(const char* id, const trace::RunRecording& recording, TimeAxis& axis,
                   double memoryScaleBytes, float width, const TimelineStyle& style,
                   CollectiveSelection& selection, TimelineCursor& cursor,
                   TimelineFrameStats* stats = nullptr, double playheadNs = -1,
                   std::set<int>* expandedRankGroups = nullptr);

// The stacked bytes per role at time t (relative to origin) on a rank: the last sample at or
// before t.
trace::RoleBytes memoryAt(const trace::RunRecording& recording, int rank, double tNs);
// The same in `space`: the host's (--offload cpu) or the device's.
trace::RoleBytes memoryAt(const trace::RunRecording& recording, int rank, double tNs, trace::MemorySpace space);

// --offload cpu: a rank's host memory gets a lane under its device memory lane, this share of its
// height, on a scale of its own (the highest host peak of any rank, with a margin).
constexpr float kHostLaneShare = 0.5f;
bool recordsHostMemory(const trace::RunRecording& recording);
float hostLaneHeight(const trace::RunRecording& recording, const TimelineStyle& style);  // 0 without
double hostMemoryScaleBytes(const trace::RunRecording& recording);

using trace::formatBytes;
using trace::formatDuration;

}  // namespace shardscope::ui
