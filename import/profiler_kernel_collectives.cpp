#include "import/profiler_kernel_collectives.h"

#include <algorithm>
#include <optional>

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

using profiler::CommKernel;
using profiler::Launch;
using profiler::RankTrace;
using profiler::Span;

namespace {

// The collective a kernel outside NCCL runs by its name: only the four that say it outright.
std::optional<CollectiveOp> collectiveNamed(const std::string& shortName) {
  const auto kind = kindOfName(shortName);
  if (!kind) return std::nullopt;
  switch (*kind) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllToAll:
      return kind;
    default:
      return std::nullopt;
  }
}

// Whether a launch was made inside a record of a collective, c10d's or one outside it.
bool launchedInARecord(const RankTrace& trace, const Launch& launch) {
  if (insideCollectiveRecord(trace, launch.thread, launch.at)) return true;
  for (const Span* s : profiler::spansAt(trace, launch.thread, launch.at)) {
    if (profiler::isOutsideC10dCollectiveName(s->name)) return true;
  }
  return false;
}

// A collective outside c10d that a kernel ran, known by the kernel alone: timed on the device, its
// size not in the trace.
Event commKernelCollective(const KernelContext& kernels, const CommKernel& k, CollectiveOp kind,
                           const std::string& name) {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = kernels.trace.rank;
  e.op = static_cast<uint8_t>(kind);
  e.issueNs = e.beginNs = k.begin;
  e.endNs = std::max(k.end, k.begin);
  e.step = profiler::recordedStepAt(kernels.trace, k.begin);
  e.worldSize = kernels.trace.world;
  e.ownPartBytes = -1;
  e.peer = -1;
  e.sizeUnknown = 1;
  e.text = unitAndPhaseOfKernelsAround(kernels, k.begin, e) + "|" + name;
  return e;
}

}  // namespace

void readKernelsLaunchedBeforeWindow(const KernelContext& kernels, std::vector<Event>& out, CollectiveNotes& notes) {
  const RankTrace& trace = kernels.trace;
  // No host rows (every kernel's launch is missing alike), or no host record of any collective:
  // readProfilerCollectives read the NCCL kernels as the collectives.
  if (trace.launches.empty() || !hasHostCollectiveRecords(trace)) return;
  for (const auto& [correlation, kernel] : trace.ncclKernels) {
    if (kernels.launchOf(correlation)) continue;
    const auto kind = kindOfNcclKernel(kernel);
    if (!kind) continue;
    Event e = kernelCollective(trace, kernel, *kind, kernels, notes);
    e.step = kIssuedBeforeRecording;  // the step it belongs to was not recorded
    out.push_back(std::move(e));
    if (trace.rank == 0) ++notes.launchedBeforeWindow;
  }
}

void readCommunicationKernels(const KernelContext& kernels, std::vector<Event>& out, CollectiveNotes& notes) {
  const RankTrace& trace = kernels.trace;
  for (const CommKernel& k : trace.commKernels) {
    const Launch* launch = kernels.launchOf(k.correlation);
    if (launch && launchedInARecord(trace, *launch)) continue;  // its record's collective
    const std::string name = profiler::shortKernelName(k.name);
    const auto kind = collectiveNamed(name);
    if (!kind) {
      if (trace.rank == 0) ++notes.unrecognisedKernels[name];
      continue;
    }
    Event e = commKernelCollective(kernels, k, *kind, name);
    const bool beforeWindow = !launch && !trace.launches.empty();
    if (beforeWindow) e.step = kIssuedBeforeRecording;
    out.push_back(std::move(e));
    if (trace.rank == 0) ++(beforeWindow ? notes.launchedBeforeWindow : notes.outsideC10d[name]);
  }
}

}  // namespace shardscope::import
