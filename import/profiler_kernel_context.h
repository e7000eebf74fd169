// A rank's GPU kernels looked up by their launches (Kineto's correlation ids), for the readers of
// collectives: which communication kernel an op launched (it times the op on the device), and the
// unit and phase of the compute before a time on the device (what a collective read from a kernel
// alone ran in).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/profiler_trace_index.h"
#include "trace/events.h"

namespace shardscope::import {

// A rank's kernels by their launches' correlation ids, and its host compute spans
// (hostComputeSpans): what the readers of collectives look kernels up in.
struct KernelContext {
  KernelContext(const profiler::RankTrace& trace, const std::vector<trace::Event>& host);
  const profiler::Launch* launchOf(int64_t correlation) const;

  const profiler::RankTrace& trace;
  const std::vector<trace::Event>& host;
  std::unordered_map<int64_t, const profiler::Launch*> launches;
  std::unordered_map<int64_t, const profiler::CommKernel*> commKernels;
};

// The unit of the compute before `t` on the device (the nearest kernel whose launch a host compute
// span holds), its phase into `e`; "model" and no phase where none does.
std::string unitAndPhaseOfKernelsAround(const KernelContext& kernels, int64_t t, trace::Event& e);

// The communication kernel a launch inside `op` (on its thread) started, or null.
const profiler::CommKernel* commKernelOf(const KernelContext& kernels, const profiler::Span& op);

}  // namespace shardscope::import
