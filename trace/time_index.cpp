#include "trace/time_index.h"

#include <algorithm>

#include "trace/forward_search.h"

namespace shardscope::trace {

void TimeIndex::push(int64_t tNs) {
  if (times_.size() % kBlock == 0) blockFirsts_.push_back(tNs);
  times_.push_back(tNs);
}

size_t TimeIndex::countAtOrBefore(double tNs) const {
  const auto end =
      std::partition_point(times_.begin(), times_.end(), [tNs](int64_t t) { return static_cast<double>(t) <= tNs; });
  return static_cast<size_t>(end - times_.begin());
}

size_t TimeIndex::insert(int64_t tNs) {
  const auto at = static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), tNs) - times_.begin());
  times_.insert(times_.begin() + static_cast<std::ptrdiff_t>(at), tNs);
  blockFirsts_.resize((times_.size() + kBlock - 1) / kBlock);
  for (size_t k = at / kBlock; k < blockFirsts_.size(); ++k) blockFirsts_[k] = times_[k * kBlock];
  return at;
}

void TimeIndex::dropFront(size_t count) {
  count = std::min(count, times_.size());
  times_.erase(times_.begin(), times_.begin() + static_cast<std::ptrdiff_t>(count));
  blockFirsts_.clear();
  for (size_t i = 0; i < times_.size(); i += kBlock) blockFirsts_.push_back(times_[i]);
}

template <class Before>
size_t TimeIndex::lastInBlock(size_t lo, size_t hi, Before before) const {
  // The binary search below probes these lines one after another: ask for all of them at once.
  for (size_t i = lo; i < hi; i += 8) __builtin_prefetch(&times_[i]);
  const auto first = std::partition_point(times_.begin() + static_cast<std::ptrdiff_t>(lo),
                                          times_.begin() + static_cast<std::ptrdiff_t>(hi), before);
  return static_cast<size_t>(first - times_.begin()) - 1;
}

// `before` is true for a prefix of the times and false for the rest.
template <class Before>
size_t TimeIndex::lastWhere(size_t from, Before before) const {
  const size_t start = from + 1;
  if (start >= times_.size()) return from;
  // The first block that begins past the prefix: the answer lies in the block before it.
  const size_t after = firstNotBefore(blockFirsts_, start / kBlock + 1, before);
  return lastInBlock(std::max(start, (after - 1) * kBlock), std::min(after * kBlock, times_.size()), before);
}

template <class Before>
size_t TimeIndex::lastWhereNear(size_t from, Before before, size_t guess) const {
  constexpr size_t kNear = 8;  // a cache line of times either side of the guess
  if (guess <= from || guess >= times_.size()) return lastWhere(from, before);
  if (before(times_[guess])) {
    const size_t end = std::min(guess + kNear, times_.size());
    for (size_t i = guess + 1; i < end; ++i) {
      if (!before(times_[i])) return i - 1;
    }
    return lastWhere(end - 1, before);
  }
  const size_t floor = guess > from + kNear ? guess - kNear : from;
  for (size_t i = guess; i-- > floor + 1;) {
    if (before(times_[i])) return i;
  }
  return floor == from ? from : lastWhere(from, before);
}

size_t TimeIndex::lastAtOrBefore(size_t from, double tNs, size_t guess) const {
  return lastWhereNear(
      from, [tNs](int64_t t) { return static_cast<double>(t) <= tNs; }, guess);
}

size_t TimeIndex::blocksAtOrBefore(size_t from, double tNs, size_t guess) const {
  const auto before = [tNs](int64_t t) { return static_cast<double>(t) <= tNs; };
  if (guess <= from || guess > blockFirsts_.size()) return firstNotBefore(blockFirsts_, from, before);
  if (before(blockFirsts_[guess - 1])) return firstNotBefore(blockFirsts_, guess, before);
  // Past it: back from the guess by 1, 2, 4, ... blocks.
  size_t hi = guess - 1, step = 1;  // blockFirsts_[hi] is not before
  while (hi > from) {
    const size_t probe = hi - std::min(step, hi - from);
    if (before(blockFirsts_[probe])) return firstNotBefore(blockFirsts_, probe + 1, before);
    hi = probe;
    step *= 2;
  }
  return from;
}

size_t TimeIndex::lastAtOrBeforeIn(size_t block, double tNs) const {
  const size_t lo = block * kBlock;  // its time is at or before tNs: the search starts after it
  return lastInBlock(lo + 1, std::min(lo + kBlock, times_.size()),
                     [tNs](int64_t t) { return static_cast<double>(t) <= tNs; });
}

size_t TimeIndex::lastBefore(size_t from, double tNs, size_t guess) const {
  return lastWhereNear(
      from, [tNs](int64_t t) { return static_cast<double>(t) < tNs; }, guess);
}

}  // namespace shardscope::trace
