// What the timeline's drawers share: the lanes' sizes and what they show (TimelineStyle), the
// collective the user clicked, where the mouse points, and what a frame drew. Apart from the
// timeline (timeline_view.h) so that its lanes (timeline_lanes.h) see these without seeing it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stats/run_diff.h"
#include "stats/stragglers.h"
#include "trace/events.h"
#include "trace/format.h"
#include "trace/run_recording.h"

namespace shardscope::ui {

class MemoryColumnCache;  // ui/memory_columns.h

// Which collective the user clicked; the matching collective on every rank is highlighted.
struct CollectiveSelection {
  bool active = false;
  int op = 0;
  int step = -1;
  std::string unit;
  int phase = 0;       // forward and backward all-gathers of one unit differ only here
  int microBatch = 0;  // under gradient accumulation a unit is gathered once per micro-batch
};

// The stragglers view's data for one session: per rank, each collective it met, sorted by when it
// issued it, and the longest any rank waited (how far back a visible wait can start).
struct SessionWaits {
  std::vector<std::vector<stats::CollectiveWait>> byRank;
  int64_t longestNs = 0;
};

// A diff session's marks on B's timeline: A's memory beside B's, and B's collectives that moved.
struct DiffOverlay {
  const trace::RunRecording* baseline = nullptr;        // A
  double baselineShiftNs = 0;                           // A drawn this much earlier (ui/diff_alignment.h)
  bool difference = false;                              // B - A as a lane, in place of A's outline over B's
  const std::vector<stats::DiffMark>* marks = nullptr;  // by rank, then time (stats/run_diff.h)
};

struct PipelineLanes;  // ui/pipeline_lanes.h

struct TimelineStyle {
  float memoryLaneHeight = 70.0f;
  float spanLaneHeight = 18.0f;
  float foldPixels = 3.0f;  // spans narrower than this fold into one block
  // The device lanes (allocator cache, CUDA/NCCL runtime) start hidden: on a GPU the runtime alone
  // can dwarf the tensors whose sharding the timeline is about. Ticking them rescales the lanes.
  bool showRole[trace::kMemoryRoleCount] = {true, true, true, true, true, true, true, true, false, false};
  double capacityBytes = 0;  // one device's memory (--gpu-memory): a line in the memory lanes; 0: none
  // The stragglers view (W): each collective's last rank marked, the others' wait hatched; null: off.
  const SessionWaits* waits = nullptr;
  // A PyTorch job opened with some of its ranks' traces: the others share one line (rank_rows.h).
  bool foldRanksWithoutRecords = false;
  // A PyTorch job traced without profile_memory: each memory lane is a thin line that says so.
  bool memoryNotRecorded = false;
  // Where the memory lanes keep their columns between frames (the window's); null: found each frame.
  MemoryColumnCache* memoryColumns = nullptr;
  // In a diff session: this session drawn this much earlier (A, its steps lined up with B's), and
  // on B, what the diff marks; null elsewhere.
  double shiftNs = 0;
  const DiffOverlay* diff = nullptr;
  // A pipeline run's actions and activations held, a lane each under every rank's comm lane; null
  // for any other run.
  const PipelineLanes* pipeline = nullptr;
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
  int diffMarks = 0;         // a diff session: B's collectives marked as moved past the gate
  int ghostColumns = 0;      // and columns of A's memory drawn on B's lanes (outline or B - A)
  int actionCells = 0;       // a pipeline run's action cells drawn
  int heldSteps = 0;         // and steps of its activations-held lanes
  float laneWidth = 0;       // the lanes' width in pixels: a memory lane's columns (a whole number)
};

using trace::formatBytes;
using trace::formatDuration;

}  // namespace shardscope::ui
