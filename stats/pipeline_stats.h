// What a pipeline rank's recording says of its schedule (--pp): the bubble, the time in its steps
// with no forward or backward running, and the micro-batches whose activations it held at once.
// Measured from the compute spans alone, so a reopened trace gives what the run gave.
#pragma once

#include "trace/run_recording.h"

namespace shardscope::stats {

struct PipelineFigures {
  double bubbleSecondsPerStep = 0;  // mean over the steps after the first (all if one)
  double bubbleShare = 0;           // of those steps' time
  // The most micro-batches with a unit whose forward had ended and whose backward had not, at once:
  // GPipe climbs to M, 1F1B stays at P - rank.
  int peakMicroBatchesInFlight = 0;
};

PipelineFigures pipelineFigures(const trace::RankTimeline& timeline);

}  // namespace shardscope::stats
