#include "import/profiler_kernel_context.h"

#include <algorithm>

#include "import/profiler_compute.h"

namespace shardscope::import {

using profiler::Launch;
using trace::Event;

namespace {

// How far back from a kernel-only collective the compute kernels are asked for their unit: past a
// few dozen, the kernels were launched before the trace, or by nothing a host span names.
constexpr int kKernelsLookedBack = 64;

}  // namespace

KernelContext::KernelContext(const profiler::RankTrace& trace, const std::vector<Event>& host)
    : trace(trace), host(host) {
  for (const Launch& l : trace.launches) launches.emplace(l.correlation, &l);
  for (const profiler::CommKernel& k : trace.commKernels) commKernels.emplace(k.correlation, &k);
}

const Launch* KernelContext::launchOf(int64_t correlation) const {
  const auto it = launches.find(correlation);
  return it == launches.end() ? nullptr : it->second;
}

std::string unitAndPhaseOfKernelsAround(const KernelContext& kernels, int64_t t, Event& e) {
  const auto& compute = kernels.trace.computeKernels;
  auto it = std::upper_bound(compute.begin(), compute.end(), t,
                             [](int64_t v, const profiler::GpuKernel& k) { return v < k.begin; });
  for (int n = 0; it != compute.begin() && n < kKernelsLookedBack; ++n) {
    --it;
    const Launch* launch = kernels.launchOf(it->correlation);
    const Event* around = launch ? hostSpanAt(kernels.host, launch->at) : nullptr;
    if (!around) continue;
    const auto kind = static_cast<trace::ComputeKind>(around->op);
    if (kind != trace::ComputeKind::Forward && kind != trace::ComputeKind::Backward) continue;
    e.phase = around->phase;
    return around->text;
  }
  e.phase = static_cast<uint8_t>(trace::Phase::None);
  return "model";
}

const profiler::CommKernel* commKernelOf(const KernelContext& kernels, const profiler::Span& op) {
  const auto& launches = kernels.trace.launches;
  auto it =
      std::lower_bound(launches.begin(), launches.end(), op.begin, [](const Launch& l, int64_t t) { return l.at < t; });
  for (; it != launches.end() && it->at <= op.end; ++it) {
    if (it->thread != op.thread) continue;
    const auto kernel = kernels.commKernels.find(it->correlation);
    if (kernel != kernels.commKernels.end()) return kernel->second;
  }
  return nullptr;
}

}  // namespace shardscope::import
