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
#include <string>
#include <vector>

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

  CollectiveNotes& operator+=(const CollectiveNotes& o) {
    untyped += o.untyped;
    unreadOps += o.unreadOps;
    fromBackend += o.fromBackend;
    fromParams += o.fromParams;
    fromKernel += o.fromKernel;
    offGrid += o.offGrid;
    unnamedGroup += o.unnamedGroup;
    for (const auto& [name, n] : o.outsideC10d) outsideC10d[name] += n;
    return *this;
  }
};

// The rank's collectives, in the order their records were found, into `out`.
// `host`: the rank's host compute spans (hostComputeSpans), for the unit and phase of a collective
// no FSDP2 annotation is around.
void readProfilerCollectives(const profiler::RankTrace& trace, const std::vector<trace::Event>& host,
                             std::vector<trace::Event>& out, CollectiveNotes& notes);

}  // namespace shardscope::import
