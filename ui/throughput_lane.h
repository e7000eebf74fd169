// One lane under a session's ranks, on the timeline's time axis: each completed step of rank 0 as a
// bar over the step's own time, as tall as its throughput (tokens/s for gpt, samples/s for mlp),
// labelled with the step time, the throughput and, against a peak, the MFU. Everything comes from
// the recorded step ends; the peak is the user's (--peak-tflops) or the one a GPU rank measured
// (device_limits.h), and the lane says which.
#pragma once

#include <string>

#include "stats/device_limits.h"
#include "config/run_config.h"
#include "trace/run_recording.h"
#include "ui/time_axis.h"

namespace shardscope::ui {

struct ThroughputWork {
  double itemsPerRankStep = 0;  // tokens (gpt) or samples (mlp) one rank processes per step
  const char* itemName = "samples";
  double flopsPerItem = 0;  // model FLOPs per item (run_stats.h)
  double peakFlops = 0;     // the peak, FLOP/s (stated, or measured on the GPU); 0: no MFU
  std::string peakNote;     // which (device_limits.h)
};

ThroughputWork throughputWorkOf(const config::RunConfig& config, int64_t parameterCount,
                                const stats::DeviceFacts& device = {});

// Draws at the cursor, `width` wide, the run drawn `shiftNs` earlier (a diff's A,
// ui/diff_alignment.h); returns the height used (0 when no step has ended yet).
float drawThroughputLane(const trace::RunRecording& recording, const TimeAxis& axis, float width,
                         const ThroughputWork& work, double shiftNs = 0);

}  // namespace shardscope::ui
