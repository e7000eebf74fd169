#include "trace/rank_clock.h"

#include <algorithm>
#include <cstdlib>

namespace shardscope::trace {

void RankClock::add(const Event& e) {
  if (e.uncertaintyNs < 0) return;
  const Reading reading{e.beginNs, e.endNs - e.beginNs, e.uncertaintyNs};
  const auto at = std::upper_bound(readings_.begin(), readings_.end(), reading.localNs,
                                   [](int64_t t, const Reading& r) { return t < r.localNs; });
  readings_.insert(at, reading);
  if (!e.text.empty()) host_ = e.text;
  shifted_ = shifted_ || std::llabs(reading.offsetNs) > reading.uncertaintyNs;
  if (readings_.size() == 1 || reading.uncertaintyNs < best_.uncertaintyNs) best_ = reading;
  // Two readings' true offsets lie within their bounds; further apart than both bounds together,
  // the offset itself moved.
  for (const auto& other : readings_) {
    drifted_ = drifted_ || std::llabs(other.offsetNs - reading.offsetNs) > other.uncertaintyNs + reading.uncertaintyNs;
  }
}

int64_t RankClock::shiftAt(int64_t localNs) const {
  if (!shifted_ || readings_.empty()) return 0;
  if (!drifted_) return best_.offsetNs;
  if (localNs <= readings_.front().localNs) return readings_.front().offsetNs;
  if (localNs >= readings_.back().localNs) return readings_.back().offsetNs;
  const auto next = std::upper_bound(readings_.begin(), readings_.end(), localNs,
                                     [](int64_t t, const Reading& r) { return t < r.localNs; });
  const Reading& b = *next;
  const Reading& a = *(next - 1);
  if (b.localNs == a.localNs) return b.offsetNs;
  const long double along =
      static_cast<long double>(localNs - a.localNs) / static_cast<long double>(b.localNs - a.localNs);
  return a.offsetNs + static_cast<int64_t>(along * static_cast<long double>(b.offsetNs - a.offsetNs));
}

double RankClock::driftPpm() const {
  if (readings_.size() < 2 || readings_.back().localNs == readings_.front().localNs) return 0;
  return 1e6 * static_cast<double>(readings_.back().offsetNs - readings_.front().offsetNs) /
         static_cast<double>(readings_.back().localNs - readings_.front().localNs);
}

int64_t RankClock::worstUncertaintyNs() const {
  int64_t worst = 0;
  for (const auto& r : readings_) worst = std::max(worst, r.uncertaintyNs);
  return worst;
}

}  // namespace shardscope::trace
