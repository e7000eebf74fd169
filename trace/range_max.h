// The index of the largest value in any range of an append-only sequence, in O(log n). The
// timeline asks it for the highest memory sample under each pixel column, so drawing a lane costs
// O(width x log n) however many samples the run holds (as Tracy folds what lies under a pixel,
// instead of walking it every frame). A bottom-up segment tree over the values' indices; its
// capacity doubles as values are appended, so appending stays O(1) amortised plus the walk up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardscope::trace {

class RangeMax {
 public:
  void push(int64_t value);
  size_t size() const { return values_.size(); }
  int64_t value(size_t i) const { return values_[i]; }
  // The index of the largest value in [begin, end), the earliest of equal ones; end > begin.
  size_t argmax(size_t begin, size_t end) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t better(uint32_t a, uint32_t b) const;
  void rebuild(size_t capacity);

  std::vector<int64_t> values_;
  std::vector<uint32_t> tree_;  // tree_[capacity_ + i] = i; tree_[j] = the better of its children
  size_t capacity_ = 0;
};

}  // namespace shardscope::trace
