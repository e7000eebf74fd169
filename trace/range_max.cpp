#include "trace/range_max.h"

#include <algorithm>

namespace shardscope::trace {

uint32_t RangeMax::better(uint32_t a, uint32_t b) const {
  if (a == kNone) return b;
  if (b == kNone) return a;
  const int64_t va = values_[a], vb = values_[b];
  return vb > va || (vb == va && b < a) ? b : a;
}

void RangeMax::rebuild(size_t capacity) {
  capacity_ = capacity;
  tree_.assign(2 * capacity_, kNone);
  for (size_t i = 0; i < values_.size(); ++i) tree_[capacity_ + i] = static_cast<uint32_t>(i);
  for (size_t j = capacity_ - 1; j >= 1; --j) tree_[j] = better(tree_[2 * j], tree_[2 * j + 1]);
}

void RangeMax::push(int64_t value) {
  values_.push_back(value);
  const size_t i = values_.size() - 1;
  if (i >= capacity_) {
    rebuild(std::max<size_t>(64, 2 * capacity_));
    return;
  }
  size_t j = capacity_ + i;
  tree_[j] = static_cast<uint32_t>(i);
  // Up the tree while the new value wins: where it does not, no ancestor changes either.
  for (j /= 2; j >= 1; j /= 2) {
    const uint32_t winner = better(tree_[2 * j], tree_[2 * j + 1]);
    if (winner == tree_[j]) break;
    tree_[j] = winner;
  }
}

size_t RangeMax::argmax(size_t begin, size_t end) const {
  uint32_t best = kNone;
  for (size_t l = begin + capacity_, r = end + capacity_; l < r; l /= 2, r /= 2) {
    if (l & 1) best = better(best, tree_[l++]);
    if (r & 1) best = better(best, tree_[--r]);
  }
  return best == kNone ? begin : best;
}

}  // namespace shardscope::trace
