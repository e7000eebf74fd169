// A synthetic but well-formed recording (FSDP-like: per unit gather, forward, free, ...), for the
// frame-time benchmark and the UI tests: sized at will, without running anything.
#pragma once

#include <algorithm>

#include "trace/run_recording.h"

namespace shardscope::ui {

// About `eventsPerRank` events per rank (memory events, compute spans and collectives).
trace::RunRecording syntheticRecording(int ranks, int eventsPerRank, int units = 8);

}  // namespace shardscope::ui
