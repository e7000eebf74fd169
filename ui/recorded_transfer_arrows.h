// A PyTorch job's pipeline trace names each step's compute actions, but its transfers are c10d's
// sends and receives: named (which stage's output or gradient, of which micro-batch) only where the
// multi-stage runtime wraps each in its own span ("PP:1RECV_F0", which the import keeps in the op's
// unit), their peer only with record_shapes=True. The Schedule tab's arrows for it: where a rank's
// sends (or receives) of the step are all named, by their names; else from the order the rank ran
// things in, as PyTorch's single-stage schedules run them: each forward whose next stage is on
// another rank sends its activation there, each backward (or I) whose stage before is elsewhere
// sends its input's gradient back, and each rank receives what its forwards and backwards need
// before they run. So a rank's k-th send in a step carried the k-th output its actions left to
// send, and its k-th receive took the k-th input they needed; a send and the receive of the same
// output, by the same replica of the stages (a (pp, dp) mesh's), make an arrow. Sends and
// receives issued before the step's first action beyond that count (an evaluation's, shape
// inference's) are passed over. Where a rank's are fewer, or still more, or a send's named peer is
// not where its output goes, or a send would be issued before what it carries began to be made or
// a receive after what needs it was done (the order shifted by a job's own transfer), its
// transfers are left out, and counted.
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
