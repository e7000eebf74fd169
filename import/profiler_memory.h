// A PyTorch job's memory per rank, in shardscope's roles, from one of two records of it:
//   the profiler's [memory] events (profile_memory=True): each allocation's role from the spans in
//     force on its thread (import/profiler_roles.h)
//   the CUDA allocator's snapshot (rank-R.memory.pickle, import/cuda_snapshot.h): each allocation's
//     role from the stack that made it, and what was held when the recorded steps began from the
//     allocator's own history, placed on the profiler's clock by the times both carry.
// Either way a gradient is known by its life (made in backward, freed by zero_grad or consumed by
// the reduce-scatter), and a free goes to its allocation's role.
#pragma once

#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "import/cuda_snapshot.h"
#include "trace/events.h"
#include "import/profiler_trace_index.h"

namespace shardscope::import {

// What a rank held when its recorded steps began, by tensor role, as python/shardscope_record
// counted it from the job's model and optimizer.
struct HeldAtStart {
  std::array<int64_t, trace::kTensorRoleCount> bytes{};
  int64_t total() const { return std::accumulate(bytes.begin(), bytes.end(), int64_t{0}); }
};

// What reading rank 0's memory found, for the load's note.
struct MemoryNotes {
  bool fromSnapshot = false;           // read from its CUDA memory snapshot
  int64_t unknownFrees = 0;            // frees of blocks allocated before the record began, taken from other
  int64_t heldAtStart = 0;             // bytes the device held when the record began (GPU) that no record names
                                       // (the snapshot: held before its history began)
  std::optional<HeldAtStart> counted;  // what rank 0's recorder counted of it (model, optimizer)
  bool hostMemory = false;             // its memory events are the host's (CPU ranks)
  int64_t unnamedBytes = 0;            // its allocations no span or frame named a role for (other)
  int64_t allocatedBytes = 0;          // its allocations in all
};

// The note's line for rank 0's allocations that no span or stack frame named ("" when none).
std::string describeUnnamedBytes(const MemoryNotes& notes);

// Whether the trace's memory events are a GPU's (else the host's).
bool tracesDeviceMemory(const profiler::RankTrace& trace);

// The device the trace's GPU memory events name, or -1.
int traceMemoryDevice(const profiler::RankTrace& trace);

// The profiler's [memory] events of the device `tracesDeviceMemory` says, in roles.
void readProfilerMemory(const profiler::RankTrace& trace, const std::optional<HeldAtStart>& counted,
                        std::vector<trace::Event>& out, MemoryNotes& notes);

// "" when the snapshot's history has allocations or frees inside the trace's recorded steps (or the
// trace has no steps), else why it is not this recording's: a snapshot of another run left in the
// directory would draw only what was held, silently.
std::string snapshotMissesSteps(const profiler::RankTrace& trace, const CudaSnapshot& snapshot);

// The snapshot's allocations and frees from the first recorded step's start to the last one's end
// (a trace without steps: over the whole history, on the snapshot's own clock when the trace has
// no base time), in roles, after what the device held at that start, by role.
void readSnapshotMemory(const profiler::RankTrace& trace, const CudaSnapshot& snapshot,
                        const std::optional<HeldAtStart>& counted, std::vector<trace::Event>& out, MemoryNotes& notes);

}  // namespace shardscope::import
