// A CUDA memory snapshot as torch.cuda.memory._dump_snapshot writes it (a pickle; python/
// shardscope_record writes one per GPU rank, DIR/rank-R.memory.pickle). With the history that
// torch.cuda.memory._record_memory_history keeps, it holds every allocation and free the caching
// allocator made on each device while that was on, each with the stack where it happened (C++ and
// Python frames, innermost first) and its time in microseconds since the epoch, and the blocks
// still allocated when it was written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "import/profiler_roles.h"
#include "import/python_pickle.h"

namespace shardscope::trace {

struct AllocatorAction {
  enum class Kind : uint8_t { Alloc, FreeRequested, FreeCompleted };
  Kind kind = Kind::Alloc;
  int64_t address = 0, bytes = 0;
  int64_t timeUs = 0;                     // microseconds since the epoch
  const pickle::Value* frames = nullptr;  // its stack: a list of {"name", "filename", "line"}, or null
};

struct CudaSnapshot {
  pickle::ValuePtr root;                 // the whole snapshot: the frames live in it
  int device = -1;                       // the device whose history `actions` is
  std::vector<AllocatorAction> actions;  // that device's allocations and frees, in the allocator's order
  int64_t heldWhenWritten = 0;  // that device's allocated bytes (blocks active or awaiting their free) at the end
  int64_t otherActions = 0;     // segment, snapshot and out-of-memory entries, not read
};

// A stack's frames, innermost first (views into the snapshot, valid while it is), at most
// kMaxStackFrames of them: the roles' functions are within the innermost few dozen.
constexpr size_t kMaxStackFrames = 512;
std::vector<StackFrame> stackOf(const pickle::Value* frames);

// DIR/rank-R.memory.pickle, or its gzipped copy (.gz) where only that one is there.
std::string cudaSnapshotFileName(const std::string& dir, int rank);

// Reads `path`'s history of `device`, or with -1 of the device that has one (the longest, when
// several do). "" or why not: not a pickle or cut short, not a memory snapshot (no device_traces),
// dumped without a history (_record_memory_history was off), entries without times (time_us), none
// for `device`.
std::string readCudaSnapshot(const std::string& path, int device, CudaSnapshot& out);

}  // namespace shardscope::trace
