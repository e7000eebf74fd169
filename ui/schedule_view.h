// The Schedule tab (--pp): one step of a pipeline run, schedule against measurement. Per rank, in
// pipeline order: its actions as measured (each a cell as wide as its compute, coloured by
// micro-batch, labelled as the schedule names it, "1F3"), the bubble hatched behind them, and the
// transfers between stages as arrows with their bytes; under it the same actions as planned (laid
// out with the run's own mean F, B, I and W times and no waiting); then how many micro-batches'
// activations the rank holds over the step. Beside each rank its bubble three ways: measured,
// planned and the closed form (a prediction). Everything measured comes from the recording's
// action groups and spans (stats/pipeline_actions.h); the plan names its schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stats/pipeline_actions.h"
#include "ui/pipeline_lanes.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct ScheduleCell {
  config::PipeAction action;
  double begin = 0;  // seconds from the step's start (planned: from the plan's)
  double end = 0;
};

struct ScheduleArrow {
  int fromRow = 0, toRow = 0;
  double sent = 0;              // seconds from the step's start: the send issued
  double received = 0;          // the receive done
  int64_t bytes = 0;            // the message, as the send recorded it; 0 where it did not
  std::string label;            // "F mb3 stage1->2"
  config::PipeAction transfer;  // what it carried: SendActivation or SendGradient, of the sending stage
};

struct ScheduleRow {
  int rank = 0;
  std::string label;  // "rank 1 · stages 1,3"
  std::vector<ScheduleCell> measured, planned;
  std::vector<std::pair<double, int>> held;  // (seconds, micro-batches held from then on)
  double bubbleSeconds = 0;                  // this step's, measured: the window less its compute
  double plannedBubbleSeconds = 0;
};

// One step of one session, ready to draw; `error` says why there is none.
struct ScheduleFrame {
  std::string error;
  int32_t step = -1;
  double seconds = 0;         // the measured step's actions, first begin to last end
  double plannedSeconds = 0;  // the plan's
  int64_t stepBeginNs = 0;    // absolute, on the recording's clock
  std::vector<ScheduleRow> rows;
  std::vector<ScheduleArrow> arrows;
  bool arrowsFromSends = false;       // paired from the trace's sends and receives (ui/recorded_transfer_arrows.h)
  int unpairedSends = 0;              // the transfers of its sends left out
  config::ActionDurations durations;  // the plan's, in seconds
  std::string closedForm;             // "(P-1)/M = 20.0 %", a prediction
  double closedFormShare = 0;         // of the step
  // Where the ranks share one GPU: that a rank's idle time holds the others' kernels (the plan and
  // the closed form give each stage a device of its own). Empty otherwise.
  std::string sharedDevice;
};

// The frame for `session` at the playhead (relative to its origin): the step the playhead is in,
// else the last step every rank ran whole (all its schedule's actions).
ScheduleFrame scheduleFrame(const Session& session, double playheadNs);
// The same in two parts, for a view that keeps each rank's measured actions between frames: which
// step (-1: none whole yet), and its frame.
int32_t scheduleStepAt(const Session& session, const std::vector<std::vector<stats::MeasuredAction>>& actions,
                       double playheadNs);
ScheduleFrame scheduleFrameOf(const Session& session, const std::vector<std::vector<stats::MeasuredAction>>& actions,
                              int32_t step);

// What the tab keeps between frames: the session shown, and its frame until the store changes or
// the playhead leaves the step (a frame walks every rank's spans, which a frame must not redo).
struct ScheduleViewState {
  int session = -1;   // -1: the first that ran a pipeline
  int followed = -1;  // the playhead's session when last seen: a new one (a caption's run) is shown
  uint64_t version = UINT64_MAX;
  int frameOf = -1;  // the session `frame` was made for
  ScheduleFrame frame;
};

// The tab: a choice of session where several ran pipelines, then the frame, at the playhead. Each
// session's ranks' actions are the window's (`lanes`, per session: the timeline's pipeline lanes
// read them once per store version).
void drawScheduleTab(ScheduleViewState& state, const std::vector<Session>& sessions,
                     const std::vector<PipelineLanes>& lanes, uint64_t storeVersion, double playheadNs,
                     int playheadSession = -1);

}  // namespace shardscope::ui
