#include "ui/column_peaks.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace shardscope::ui {
namespace {

using trace::RangeMax;
using trace::TimeIndex;
static_assert(TimeIndex::kBlock == RangeMax::kBlock, "a column's end blocks are the range-max tree's blocks");

// Where a column ends: the last sample at or before its end time (sample 0 where none is, as the
// first sample is then the one a sweep starts from), known to its block, and to the sample once
// asked for.
struct ColumnEdge {
  double tNs = 0;
  size_t block = 0;
  bool beforeFirst = false;  // no sample is at or before tNs
  mutable std::optional<size_t> sample;
};

// The edges of a lane's columns, left to right.
class EdgeSweep {
 public:
  explicit EdgeSweep(const TimeIndex& times) : times_(times) {}

  ColumnEdge at(double tNs) {
    const size_t before = blocks_;
    blocks_ = times_.blocksAtOrBefore(blocks_, tNs, blocks_ + stride_);
    stride_ = blocks_ - before;
    ColumnEdge edge{tNs, blocks_ == 0 ? 0 : blocks_ - 1, blocks_ == 0, std::nullopt};
    if (edge.beforeFirst) edge.sample = 0;
    return edge;
  }
  // Whether sample i is later than tNs (past the last sample counts as later).
  bool laterThan(size_t i, double tNs) const { return i >= times_.size() || static_cast<double>(times_[i]) > tNs; }
  size_t sample(const ColumnEdge& edge) const {
    if (!edge.sample) edge.sample = times_.lastAtOrBeforeIn(edge.block, edge.tNs);
    return *edge.sample;
  }

 private:
  const TimeIndex& times_;
  size_t blocks_ = 0;  // the blocks that begin at or before the last edge's time
  size_t stride_ = 0;  // by how many blocks the last edge moved: the next one's guess
};

RangeMax::Best bestOf(const RangeMax& totals, size_t begin, size_t end) {
  const size_t i = totals.argmax(begin, end);
  return {totals.value(i), static_cast<uint32_t>(i)};
}

// The best of the column whose samples are [head's, tail's]: head is the sample in force at its
// start (the column before's tail), tail its last.
size_t columnPeak(const EdgeSweep& sweep, const RangeMax& totals, const ColumnEdge& head, const ColumnEdge& tail) {
  constexpr size_t kBlock = RangeMax::kBlock;
  if (tail.block < head.block + 2) {  // no whole block inside: both ends to the sample
    const size_t first = sweep.sample(head), last = sweep.sample(tail);
    return last > first ? totals.argmax(first, last + 1) : first;
  }
  RangeMax::Best best = totals.bestOfBlocks(head.block + 1, tail.block);
  // The head's part of its block comes before the inner blocks and wins a tie, so a block whose
  // best is as high is looked at. Where the block's best lies in the part (the sample after it is
  // past the column's start), it is the part's best; otherwise the part is read.
  const RangeMax::Best& headBlock = totals.blockBest(head.block);
  if (headBlock.value >= best.value) {
    const bool inPart = sweep.laterThan(headBlock.index + 1, head.tNs);
    best = RangeMax::better(inPart ? headBlock : bestOf(totals, sweep.sample(head), (head.block + 1) * kBlock), best);
  }
  // The tail's part comes after them and must be higher. The lane's last block is not in the
  // tree until it fills: its part is always read.
  if (tail.block >= totals.fullBlocks()) {
    return RangeMax::better(best, bestOf(totals, tail.block * kBlock, sweep.sample(tail) + 1)).index;
  }
  const RangeMax::Best& tailBlock = totals.blockBest(tail.block);
  if (tailBlock.value > best.value) {
    const bool inPart = !sweep.laterThan(tailBlock.index, tail.tNs);
    best = RangeMax::better(best, inPart ? tailBlock : bestOf(totals, tail.block * kBlock, sweep.sample(tail) + 1));
  }
  return best.index;
}

}  // namespace

std::vector<size_t> findMemoryColumns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                      const ColumnSpan& span) {
  std::vector<size_t> out(static_cast<size_t>(std::max(span.width, 0)), kNoSample);
  if (samples.empty() || span.width <= 0) return out;
  EdgeSweep sweep(samples.times());
  ColumnEdge head = sweep.at(span.beginAbs);
  const double nsPerPixel = (span.endAbs - span.beginAbs) / span.width;
  for (int c = 0; c < span.width; ++c) {
    ColumnEdge tail = sweep.at(span.beginAbs + (c + 1) * nsPerPixel);
    // Every sample of a column that ends before the first one is later than it: it shows none.
    if (!tail.beforeFirst) out[static_cast<size_t>(c)] = columnPeak(sweep, totals, head, tail);
    head = std::move(tail);
  }
  return out;
}

}  // namespace shardscope::ui
