#include "ui/memory_columns.h"

namespace shardscope::ui {

std::vector<size_t> findMemoryColumns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                      const ColumnSpan& span) {
  std::vector<size_t> out(static_cast<size_t>(std::max(span.width, 0)), kNoSample);
  if (samples.empty() || span.width <= 0) return out;
  const size_t inForce = samples.countAtOrBefore(span.beginAbs);
  size_t i = inForce == 0 ? 0 : inForce - 1;
  const double nsPerPixel = (span.endAbs - span.beginAbs) / span.width;
  const auto columnEnd = [&](int c) { return span.beginAbs + (c + 1) * nsPerPixel; };
  // The column's samples are [i, last]: the sample in force at its start, then those inside it.
  // Each column's `last` is found one column ahead, so its search's cache misses overlap the
  // range query of the column before (whose values were asked for meanwhile).
  const trace::TimeIndex& times = samples.times();
  size_t last = times.lastAtOrBefore(i, columnEnd(0));
  for (int c = 0; c < span.width && i < samples.size(); ++c) {
    const double colEnd = columnEnd(c);
    totals.prefetchRange(i, last + 1);
    const size_t nextLast = times.lastAtOrBefore(last, columnEnd(c + 1), 2 * last - i);
    // The largest sample in the column: the range-max pyramid finds it without walking them.
    const size_t best = last > i ? totals.argmax(i, last + 1) : i;
    i = last;
    last = nextLast;
    if (static_cast<double>(times[best]) > colEnd) continue;  // before the first sample
    out[static_cast<size_t>(c)] = best;
  }
  return out;
}

const std::vector<size_t>& MemoryColumnCache::columns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                                      const ColumnSpan& span) {
  const int64_t firstNs = samples.empty() ? 0 : samples.time(0);
  const int64_t lastNs = samples.empty() ? 0 : samples.time(samples.size() - 1);
  // Lanes of sessions long closed would pile up: a few hundred lanes are kept at the most.
  if (entries_.size() > 512 && !entries_.count(&samples)) entries_.clear();
  Entry& e = entries_[&samples];
  if (e.samples == samples.size() && e.firstNs == firstNs && e.lastNs == lastNs && e.span == span &&
      e.columns.size() == static_cast<size_t>(std::max(span.width, 0))) {
    ++kept_;
    return e.columns;
  }
  ++found_;
  e.samples = samples.size();
  e.firstNs = firstNs;
  e.lastNs = lastNs;
  e.span = span;
  e.columns = findMemoryColumns(samples, totals, span);
  return e.columns;
}

}  // namespace shardscope::ui
