// What a rank held at a time, by role: the question every memory view asks of a recording (the
// lanes' hover, the breakdown, who holds what).
#pragma once

#include "trace/run_recording.h"

namespace shardscope::ui {

// The stacked bytes per role at time t (relative to origin) on a rank: the last sample at or
// before t.
trace::RoleBytes memoryAt(const trace::RunRecording& recording, int rank, double tNs);
// The same in `space`: the host's (--offload cpu) or the device's.
trace::RoleBytes memoryAt(const trace::RunRecording& recording, int rank, double tNs, trace::MemorySpace space);

}  // namespace shardscope::ui
