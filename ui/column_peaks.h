// Which memory sample each pixel column of a memory lane shows: the highest in force over the
// column (the one in force at its start and those inside it), the earliest of equals. At a whole
// run's zoom a column holds thousands of samples, and a frame searches every column of every lane
// again each time the view zooms.
//
// The search goes by blocks of 64 samples first. Where a column starts and ends is found to its
// block from the coarse level of the times (trace::TimeIndex: every 64th time, read in order as
// the sweep moves on); the blocks wholly inside the column give their best from the range-max tree
// (trace::RangeMax) without reading a sample. Only where one of the two end blocks holds a value
// that could beat them (its own best from the tree is as high) is the column's end found to the
// sample and that end's samples read: a block's best bounds its part of the column. A column of a
// block or two is found to the sample at both ends, as its samples sit in a line or two anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "trace/range_max.h"
#include "trace/role_track.h"

namespace shardscope::ui {

// The pixel columns of a lane: `width` of them over [beginAbs, endAbs) ns on the events' clock.
struct ColumnSpan {
  double beginAbs = 0;
  double endAbs = 0;
  int width = 0;
  bool operator==(const ColumnSpan& o) const {
    return beginAbs == o.beginAbs && endAbs == o.endAbs && width == o.width;
  }
  double columnNs() const { return (endAbs - beginAbs) / width; }
  // Columns [first, last) of this span, as a span of their own.
  ColumnSpan columns(int first, int last) const {
    return {beginAbs + first * columnNs(), beginAbs + last * columnNs(), last - first};
  }
};

// A column before the lane's first sample shows none.
constexpr size_t kNoSample = SIZE_MAX;

// Each column's sample (an index into `samples`, whose totals `totals` holds), or kNoSample.
// O(width x log samples) whatever the samples in view.
std::vector<size_t> findMemoryColumns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                      const ColumnSpan& span);

}  // namespace shardscope::ui
