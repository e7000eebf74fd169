// A PyTorch job's pipeline trace names each step's compute actions but not, or not always, its
// transfers: its sends and receives are c10d's ops, their peer named only with record_shapes=True.
// The Schedule tab's arrows for it come from the order a rank ran things in, as PyTorch's schedules
// run them: each forward whose next stage is on another rank sends its activation there, each
// backward (or I) whose stage before is elsewhere sends its input's gradient back, and each rank
// receives what its forwards and backwards need before they run. So a rank's k-th send in a step
// carried the k-th output its actions left to send, and its k-th receive took the k-th input they
// needed; a send and the receive of the same output make an arrow. Sends and receives issued before
// the step's first action beyond that count (an evaluation's, shape inference's) are passed over.
// Where a rank's are fewer, or still more, or a send's named peer is not where its output goes,
// its transfers are left out, and counted.
#pragma once

#include <cstdint>
#include <vector>

#include "stats/pipeline_actions.h"
#include "ui/schedule_view.h"

namespace shardscope::ui {

struct RecordedArrows {
  std::vector<ScheduleArrow> arrows;
  int unpaired = 0;  // sends not drawn
};

// `step`: each rank's measured actions of step `stepNumber`; `rowOfRank`: each rank's row; times
// from `stepBeginNs`.
RecordedArrows recordedTransferArrows(const Session& session,
                                      const std::vector<std::vector<stats::MeasuredAction>>& step,
                                      const std::vector<int>& rowOfRank, int64_t stepBeginNs, int32_t stepNumber);

}  // namespace shardscope::ui
