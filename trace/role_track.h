// Time-ordered snapshots of bytes per role: what a rank holds (its memory lane), or what it holds
// of one model unit. A memory event changes one role (two when bytes are re-attributed), so each
// sample keeps only the roles that changed, as varints of the change, in blocks of 8 samples that
// begin with a full snapshot (varints too, mostly zeros of a byte): about 7 bytes a sample beside
// its time, where a plain array of the roles would take 88 to 104, and the changes as 8-byte values 20.
// sample's bytes are rebuilt from one contiguous block (a cache line or two) rather than from
// scattered arrays. A long run's millions of samples are most of what the app holds (its bytes per
// retained event: docs/benchmarks.md).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/events.h"
#include "trace/time_index.h"

namespace shardscope::trace {

using RoleBytes = std::array<int64_t, kMemoryRoleCount>;

class RoleTrack {
 public:
  // `bytes` after the sample at tNs (not before the last sample's time).
  void push(int64_t tNs, const RoleBytes& bytes);

  size_t size() const { return times_.size(); }
  bool empty() const { return times_.empty(); }
  // The bytes its values take (as TimeIndex::heldBytes).
  size_t heldBytes() const { return times_.heldBytes() + blocks_.size() + blockStart_.size() * sizeof(uint64_t); }
  const TimeIndex& times() const { return times_; }  // for forward sweeps with a guess
  int64_t time(size_t i) const { return times_[i]; }
  RoleBytes bytes(size_t i) const;                    // the block's snapshot and at most 7 samples' changes
  void prefetch(size_t i) const;                      // asks for sample i's block, for a bytes(i) soon after
  const RoleBytes& last() const { return current_; }  // the last sample's (zeros when empty)
  // How many samples are at or before tNs: the one in force then is the one before that count.
  size_t countAtOrBefore(double tNs) const { return times_.countAtOrBefore(tNs); }
  // The bytes in force at tNs (zeros before the first sample).
  RoleBytes bytesAt(double tNs) const;

  // Splits off the first `count` samples as a track of their own (a run folding its older steps).
  // Costs the samples taken and a move of the rest's bytes down, not a rebuild of the rest: a
  // window's recording folds a few steps at a time under its lock.
  RoleTrack takeFront(size_t count);

 private:
  static constexpr size_t kBlock = 8;
  TimeIndex times_;
  // Per block: the bytes after its first sample (kMemoryRoleCount zigzag varints), then for each
  // later sample a header byte (one role changed and which, or how many) and each change as a
  // zigzag varint of the difference (led by its role's byte when more than one changed).
  std::vector<uint8_t> blocks_;
  std::vector<uint64_t> blockStart_;  // where each block begins in blocks_
  // Samples taken from the front of the first block (takeFront keeps whole blocks): sample i is
  // the (i + lead_)-th of the blocks, the first block still replaying the ones before it.
  size_t lead_ = 0;
  RoleBytes current_{};
};

}  // namespace shardscope::trace
