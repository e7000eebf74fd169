#include "trace/range_max.h"

#include <algorithm>

namespace shardscope::trace {

RangeMax::Best RangeMax::better(const Best& a, const Best& b) {
  if (a.index == kNone) return b;
  if (b.index == kNone) return a;
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

RangeMax::Best RangeMax::scan(size_t begin, size_t end) const {
  Best best;
  for (size_t i = begin; i < end; ++i) {
    if (best.index == kNone || values_[i] > best.value) best = {values_[i], static_cast<uint32_t>(i)};
  }
  return best;
}

void RangeMax::rebuild(size_t capacity) {
  capacity_ = capacity;
  tree_.assign(2 * capacity_, Best{});
  const size_t blocks = values_.size() / kBlock;
  for (size_t b = 0; b < blocks; ++b) tree_[capacity_ + b] = scan(b * kBlock, (b + 1) * kBlock);
  for (size_t j = capacity_ - 1; j >= 1; --j) tree_[j] = better(tree_[2 * j], tree_[2 * j + 1]);
}

void RangeMax::push(int64_t value) {
  values_.push_back(value);
  if (values_.size() % kBlock != 0) return;  // its block is not full yet: queries scan it
  const size_t b = values_.size() / kBlock - 1;
  if (b >= capacity_) {
    rebuild(std::max<size_t>(16, 2 * capacity_));
    return;
  }
  size_t j = capacity_ + b;
  tree_[j] = scan(b * kBlock, (b + 1) * kBlock);
  for (j /= 2; j >= 1; j /= 2) tree_[j] = better(tree_[2 * j], tree_[2 * j + 1]);
}

void RangeMax::dropFront(size_t count) {
  count = std::min(count, values_.size());
  values_.erase(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(count));
  size_t capacity = 16;
  while (capacity < values_.size() / kBlock + 1) capacity *= 2;
  rebuild(capacity);
}

size_t RangeMax::argmax(size_t begin, size_t end) const {
  const size_t firstBlock = (begin + kBlock - 1) / kBlock;  // the whole blocks inside the range
  const size_t endBlock = end / kBlock;
  if (firstBlock >= endBlock) return scan(begin, end).index;
  // Earlier parts first, so a tie keeps the earliest index.
  Best best = scan(begin, firstBlock * kBlock);
  best = better(best, bestOfBlocks(firstBlock, endBlock));
  best = better(best, scan(endBlock * kBlock, end));
  return best.index;
}

RangeMax::Best RangeMax::bestOfBlocks(size_t first, size_t end) const {
  Best best;
  for (size_t l = first + capacity_, r = end + capacity_; l < r; l /= 2, r /= 2) {
    if (l & 1) best = better(best, tree_[l++]);
    if (r & 1) best = better(best, tree_[--r]);
  }
  return best;
}

}  // namespace shardscope::trace
