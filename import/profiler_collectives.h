// A rank's collectives, from what each PyTorch from 1.12 to 2.11 records of one (import/
// profiler_trace.h reads the rest of its trace). One collective may leave up to four records, and
// is counted once whichever of them a trace holds:
//   c10d's op           c10d::allreduce_, c10d::_allgather_base_, ... (PyTorch 2.x): from when the
//                       rank issued it, its sizes from its input dims and element type
//   the backend's span  nccl:all_reduce, gloo:all_gather, ... inside the op; in PyTorch 1.x the
//                       only record of some (nccl:all_to_all, with no c10d op around it)
//   record_param_comms  NCCL's process group's record of the message sizes, element type, group
//                       size and ranks (2.x), inside the op or the backend's span
//   the NCCL kernel     ncclKernel_* / ncclDevKernel_* on the GPU, launched inside any of them:
//                       when the collective ran; alone, when the host's records are missing
// And those run outside c10d, by their own ops (symm_mem::multimem_all_reduce_, a serving
// framework's all-reduce): each one a collective, its implementation its op's name, unless a c10d
// op runs inside it (then that one is the collective, counted once).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import/profiler_kernel_context.h"
#include "import/profiler_trace_index.h"
#include "trace/events.h"

namespace shardscope::import {

struct CollectiveNotes {
  int64_t untyped = 0;       // element type not in the trace: counted as 4-byte
  int64_t unreadOps = 0;     // rank 0's c10d ops shardscope has no collective for (gather, scatter, ...)
  int64_t fromBackend = 0;   // rank 0's collectives read from a backend's span alone (PyTorch 1.x)
  int64_t fromParams = 0;    // ... from record_param_comms alone
  int64_t fromKernel = 0;    // ... from an NCCL kernel alone
  int64_t offGrid = 0;       // collectives (all ranks') in a group no row or column of the job's grid holds
  int64_t unnamedGroup = 0;  // collectives (all ranks') whose group no record names, in a job with sub-groups
  // Rank 0's collectives run outside c10d, by their own op's name (symm_mem::multimem_all_reduce_).
  std::map<std::string, int64_t> outsideC10d;
  // Rank 0's NCCL kernels that ran in the trace's window but were launched before it (the step
  // before the first recorded one): drawn, not counted in the recorded steps.
  int64_t launchedBeforeWindow = 0;
  // Rank 0's kernels whose names suggest communication, launched outside any collective's record,
  // that say no collective shardscope knows (a DeepEP dispatch), by their short names.
  std::map<std::string, int64_t> unrecognisedKernels;

  CollectiveNotes& operator+=(const CollectiveNotes& o) {
    untyped += o.untyped;
    unreadOps += o.unreadOps;
    fromBackend += o.fromBackend;
    fromParams += o.fromParams;
    fromKernel += o.fromKernel;
    offGrid += o.offGrid;
    unnamedGroup += o.unnamedGroup;
    for (const auto& [name, n] : o.outsideC10d) outsideC10d[name] += n;
    launchedBeforeWindow += o.launchedBeforeWindow;
    for (const auto& [name, n] : o.unrecognisedKernels) unrecognisedKernels[name] += n;
    return *this;
  }
};

// A collective's kind from any of its names: a backend's span (nccl:all_to_all), record_param_comms's
// "Collective name" (_allgather_base, alltoall_base), an NCCL kernel (ncclDevKernel_ReduceScatter_*).
// None for what shardscope has no collective for (gather, scatter, reduce) and for NCCL's
// SendRecv kernel, which runs all-to-alls, sends and recvs alike.
std::optional<trace::CollectiveOp> kindOfName(const std::string& name);

// An NCCL kernel's collective: by the "Collective name" PyTorch 2.x copies onto it, else by its own
// name (ncclDevKernel_AllGather_*); none for SendRecv's and what shardscope has no collective for.
std::optional<trace::CollectiveOp> kindOfNcclKernel(const profiler::Span& kernel);

// Whether `t` on `thread` lies inside (or is) a span that is a host record of a collective: c10d's
// op, a backend's span, record_param_comms (other than `besides`).
bool insideCollectiveRecord(const profiler::RankTrace& trace, int64_t thread, int64_t t,
                            const profiler::Span* besides = nullptr);

// The collective an NCCL kernel ran, from the kernel alone (a trace whose host records of it are
// missing): timed on the device, sized by the arguments PyTorch 2.x copies onto it, in the unit and
// phase of the kernels around it.
trace::Event kernelCollective(const profiler::RankTrace& trace, const profiler::Span& kernel, trace::CollectiveOp kind,
                              const KernelContext& kernels, CollectiveNotes& notes);

// Whether the trace holds any host record of a collective (c10d's op, a backend's span,
// record_param_comms, an op outside c10d).
bool hasHostCollectiveRecords(const profiler::RankTrace& trace);

// The rank's collectives from their host records (and, in a trace cut to its device rows, its NCCL
// kernels), in the order the records were found, into `out`. `kernels.host`: the rank's host
// compute spans (hostComputeSpans), for the unit and phase of a collective no FSDP2 annotation is
// around. import/profiler_kernel_collectives.h reads the rest of its kernels.
void readProfilerCollectives(const KernelContext& kernels, std::vector<trace::Event>& out, CollectiveNotes& notes);

}  // namespace shardscope::import
