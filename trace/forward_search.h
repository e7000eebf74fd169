// Searching forward from where the last search ended, as a viewer does when it sweeps a sorted
// lane pixel column by pixel column: steps of 1, 2, 4, ... then a binary search inside the last
// one. It costs O(log distance) and touches memory near `from`, where a binary search over the
// whole lane costs O(log n) cache misses per column in a lane of millions of events.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace shardscope::trace {

// The first index at or after `from` whose element is not `before` (a predicate true for a prefix
// of the elements and false for the rest), or v.size().
template <class T, class Before>
size_t firstNotBefore(const std::vector<T>& v, size_t from, Before before) {
  size_t lo = from, hi = from, step = 1;  // every element in [from, lo) is before
  while (hi < v.size() && before(v[hi])) {
    lo = hi + 1;
    hi = from + step;
    step *= 2;
  }
  hi = std::min(hi, v.size());
  return static_cast<size_t>(std::partition_point(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                                  v.begin() + static_cast<std::ptrdiff_t>(hi), before) -
                             v.begin());
}

}  // namespace shardscope::trace
