// The index of the largest value in any range of an append-only sequence, in O(log n). The
// timeline asks it for the highest memory sample under each pixel column, so drawing a lane costs
// O(width x log n) however many samples the run holds (as Tracy folds what lies under a pixel,
// instead of walking it every frame).
//
// A pyramid over blocks of 64 values: a bottom-up segment tree whose leaves are whole blocks, each
// node holding its best value beside its index, so a query compares nodes without reading the
// values they point at (a cache miss each in a lane of millions). A range's ragged ends, under a
// block each, are scanned: 64 consecutive values are 8 cache lines the prefetcher streams. Costs
// half a byte to a byte per value on top of the values (a tree over every value cost 8 to 16), and
// appending stays O(1) amortised: a block enters the tree when it fills; the tree's capacity
// doubles as blocks are added.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardscope::trace {

class RangeMax {
 public:
  void push(int64_t value);
  // Forgets the first `count` values (a run folding its older steps): indexes count from the rest.
  // A pass over the rest (they are read once, in order).
  void dropFront(size_t count);
  size_t size() const { return values_.size(); }
  // The bytes its values take (as TimeIndex::heldBytes).
  size_t heldBytes() const { return values_.size() * sizeof(int64_t) + tree_.size() * sizeof(Best); }
  int64_t value(size_t i) const { return values_[i]; }
  // The index of the largest value in [begin, end), the earliest of equal ones; end > begin.
  size_t argmax(size_t begin, size_t end) const;

  // By whole blocks, for a caller that can rule a range's ragged ends out without reading them
  // (ui/column_peaks.h): a block's best, and the best of whole blocks, from the tree alone.
  static constexpr size_t kBlock = 64;
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Best {
    int64_t value = 0;
    uint32_t index = kNone;  // kNone: none (an empty range)
  };
  // The larger; of equal values, the earlier index.
  static Best better(const Best& a, const Best& b);
  size_t fullBlocks() const { return values_.size() / kBlock; }                   // those the tree holds
  const Best& blockBest(size_t block) const { return tree_[capacity_ + block]; }  // block < fullBlocks()
  Best bestOfBlocks(size_t first, size_t end) const;  // blocks [first, end), end <= fullBlocks()

 private:
  Best scan(size_t begin, size_t end) const;  // the best of [begin, end) value by value
  void rebuild(size_t capacity);

  std::vector<int64_t> values_;
  std::vector<Best> tree_;  // tree_[capacity_ + b]: block b's best; tree_[j]: the better child
  size_t capacity_ = 0;     // blocks the tree has leaves for
};

}  // namespace shardscope::trace
