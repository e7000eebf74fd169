// A CUDA memory snapshot as torch.cuda.memory._dump_snapshot writes it (a pickle; python/
// shardscope_record writes one per GPU rank, DIR/rank-R.memory.pickle). With the history that
// torch.cuda.memory._record_memory_history keeps, it holds every allocation and free the caching
// allocator made on each device while that was on, each with the stack where it happened (C++ and
// Python frames, innermost first) and its time in microseconds since the epoch, and the blocks
// still allocated when it was written. The pickle is read whole, then only what the importer uses
// is kept (CudaSnapshot) and the pickle's tree is let go.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "import/profiler_roles.h"

namespace shardscope::import {

// A snapshot's stacks as the importer keeps them: each distinct stack once, by its frames' names
// and files (their line numbers, which no rule reads, are dropped), each distinct frame once and
// each string once. A history repeats a few hundred stacks over its hundreds of thousands of
// entries, each entry with its own copy of its frames' dicts: kept per entry, as the pickle holds
// them, they would be most of the memory a snapshot takes.
struct SnapshotStacks {
  static constexpr uint32_t kNone = UINT32_MAX;  // an action without a stack

  std::deque<std::string> strings;                    // names and files, each once
  std::vector<std::pair<uint32_t, uint32_t>> frames;  // each distinct (name, file), by index in `strings`
  std::vector<uint32_t> stackFrames;                  // every stack's frames (into `frames`), innermost first
  std::vector<uint32_t> stackEnds;                    // stack s: stackFrames[s ? stackEnds[s - 1] : 0, stackEnds[s])

  size_t size() const { return stackEnds.size(); }
  // Stack `stack`'s frames, innermost first (views into this, valid while it is); none for kNone.
  std::vector<StackFrame> framesOf(uint32_t stack) const;
  // About what they take in memory.
  size_t retainedBytes() const;
};

struct AllocatorAction {
  enum class Kind : uint8_t { Alloc, FreeRequested, FreeCompleted };
  Kind kind = Kind::Alloc;
  uint32_t stack = SnapshotStacks::kNone;  // where it happened (CudaSnapshot::stacks)
  int64_t address = 0, bytes = 0;
  int64_t timeUs = 0;  // microseconds since the epoch
};

struct CudaSnapshot {
  int device = -1;                       // the device whose history `actions` is
  std::vector<AllocatorAction> actions;  // that device's allocations and frees, in the allocator's order
  SnapshotStacks stacks;                 // the stacks the actions name
  int64_t heldWhenWritten = 0;  // that device's allocated bytes (blocks active or awaiting their free) at the end
  int64_t otherActions = 0;     // segment, snapshot and out-of-memory entries, not read
  size_t retainedBytes() const { return actions.capacity() * sizeof(AllocatorAction) + stacks.retainedBytes(); }
};

// At most this many frames of a stack are kept, innermost first: the roles' functions are within
// the innermost few dozen.
constexpr size_t kMaxStackFrames = 512;

// DIR/rank-R.memory.pickle, or its gzipped copy (.gz) where only that one is there.
std::string cudaSnapshotFileName(const std::string& dir, int rank);

// Reads `path`'s history of `device`, or with -1 of the device that has one (the longest, when
// several do). "" or why not: not a pickle or cut short, not a memory snapshot (no device_traces),
// dumped without a history (_record_memory_history was off), entries without times (time_us), none
// for `device`.
std::string readCudaSnapshot(const std::string& path, int device, CudaSnapshot& out);

}  // namespace shardscope::import
