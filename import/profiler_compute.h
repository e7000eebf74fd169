// A rank's compute from its torch.profiler trace (import/profiler_trace.h reads the rest):
//   on the host  FSDP2's forward of unit i between its pre_ and post_forward hooks, its backward
//                between its pre_ and first post_backward hooks; DDP's forward span and, per step,
//                autograd's backward; Optimizer.step
//   on a GPU     the GPU's own kernels (a trace with CUDA activity), each in the phase, unit and
//                step of the host span it was launched in: when the work ran, not when the host
//                queued it, so the overlap and exposed communication are the device's, as
//                HolisticTraceAnalysis computes them from kernels
#pragma once

#include <vector>

#include "import/profiler_trace_index.h"
#include "trace/events.h"

namespace shardscope::import {

// `host`: the rank's host spans (hostComputeSpans), the compute itself on a trace with no kernels.
void readProfilerCompute(const profiler::RankTrace& trace, const std::vector<trace::Event>& host,
                         std::vector<trace::Event>& out);

// The host's compute spans above (FSDP2's per unit, DDP's, the optimizer's), sorted by begin; and
// the one in force at `t` (the innermost begun and not ended), or null: what a collective with no
// FSDP2 annotation around it (a tensor-parallel all-reduce) ran in.
std::vector<trace::Event> hostComputeSpans(const profiler::RankTrace& trace);
const trace::Event* hostSpanAt(const std::vector<trace::Event>& host, int64_t t);

}  // namespace shardscope::import
