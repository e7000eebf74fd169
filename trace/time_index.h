// Times kept in order (a lane's sample times, its spans' begins), searched forward from where the
// last search ended, as a viewer sweeps a lane pixel column by pixel column. Two levels: every
// 64th time in an array of its own, 1/64 the size, which stays in cache and takes the long
// strides; then one block of 64 times (8 cache lines, fetched together) for the last step. Where a
// gallop over millions of times cost a dependent cache miss per probe, about a dozen per column,
// this costs about one; with a good guess, often none beyond the guess's own line. 1/8 byte per
// time on top of the times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardscope::trace {

class TimeIndex {
 public:
  static constexpr size_t kBlock = 64;  // times per block: the coarse level holds each block's first

  void push(int64_t tNs);  // not before the last one
  // Anywhere, after the times equal to it; returns its index. O(distance from the end).
  size_t insert(int64_t tNs);
  // Forgets the first `count` times (a run folding its older steps): the rest move down.
  void dropFront(size_t count);
  size_t size() const { return times_.size(); }
  // The bytes its values take (their size: a large vector's unused capacity is never touched, so
  // never resident).
  size_t heldBytes() const { return (times_.size() + blockFirsts_.size()) * sizeof(int64_t); }
  bool empty() const { return times_.empty(); }
  int64_t operator[](size_t i) const { return times_[i]; }
  // How many times are at or before tNs (a binary search over them all).
  size_t countAtOrBefore(double tNs) const;

  // The last index after `from` whose time is at or before tNs, or `from` when none after it is
  // (the caller's own place: the sample in force so far). `guess` (a sweep's previous stride
  // ahead) is looked at first; any guess gives the same answer, a good one sooner.
  size_t lastAtOrBefore(size_t from, double tNs, size_t guess = 0) const;
  // The same with times strictly before tNs.
  size_t lastBefore(size_t from, double tNs, size_t guess = 0) const;

  // The same search in two halves, for a sweep that needs the exact index only now and then: how
  // many blocks begin at or before tNs (searched forward from block `from`: those before it do),
  // which reads the coarse level only, so the last time at or before tNs lies in the block before
  // that count; then where in that block (`block`'s first time is at or before tNs).
  size_t blocksAtOrBefore(size_t from, double tNs, size_t guess = 0) const;
  size_t lastAtOrBeforeIn(size_t block, double tNs) const;

 private:
  template <class Before>
  size_t lastWhere(size_t from, Before before) const;
  // The last index in [lo - 1, hi) whose time is `before` ([lo, hi) within one block, lo - 1 known before).
  template <class Before>
  size_t lastInBlock(size_t lo, size_t hi, Before before) const;
  template <class Before>
  size_t lastWhereNear(size_t from, Before before, size_t guess) const;

  std::vector<int64_t> times_;
  std::vector<int64_t> blockFirsts_;  // times_[k * kBlock]
};

}  // namespace shardscope::trace
