#include "ui/memory_columns.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

namespace shardscope::ui {

std::optional<int> columnsMoved(const ColumnSpan& from, const ColumnSpan& to) {
  if (from.width != to.width || from.width <= 0) return std::nullopt;
  const double range = from.endAbs - from.beginAbs;
  // The same zoom, to rounding: a pan adds the same amount to both ends.
  if (std::abs((to.endAbs - to.beginAbs) - range) > 1e-9 * std::abs(range)) return std::nullopt;
  const double moved = (to.beginAbs - from.beginAbs) / from.columnNs();
  const double whole = std::round(moved);
  if (std::abs(moved - whole) > 1e-6 || whole == 0 || std::abs(whole) >= from.width) return std::nullopt;
  return static_cast<int>(whole);
}

bool MemoryColumnCache::Entry::sameLane(const trace::RoleTrack& lane) const {
  const int64_t first = lane.empty() ? 0 : lane.time(0);
  const int64_t last = lane.empty() ? 0 : lane.time(lane.size() - 1);
  return samples == lane.size() && firstNs == first && lastNs == last;
}

bool MemoryColumnCache::Entry::holds(const trace::RoleTrack& lane, const ColumnSpan& view) const {
  return sameLane(lane) && span == view && columns.size() == static_cast<size_t>(std::max(view.width, 0));
}

std::optional<int> MemoryColumnCache::Entry::dragged(const trace::RoleTrack& lane, const ColumnSpan& view) const {
  if (!sameLane(lane) || columns.size() != static_cast<size_t>(std::max(view.width, 0))) return std::nullopt;
  return columnsMoved(span, view);
}

bool MemoryColumnCache::Entry::find(const trace::RoleTrack& lane, const trace::RangeMax& totals,
                                    const ColumnSpan& view) {
  const auto moved = dragged(lane, view);
  if (!moved) {
    columns = findMemoryColumns(lane, totals, view);
    return false;
  }
  // Dragged later by k columns: the first width - k are the old ones from k on, and the last k
  // are new; earlier, the other way round. Only the new ones are searched.
  const int k = *moved, width = view.width;
  const int newFirst = k > 0 ? width - k : 0, newLast = k > 0 ? width : -k;
  std::vector<size_t> kept(static_cast<size_t>(width));
  for (int c = 0; c < width; ++c) {
    if (c < newFirst || c >= newLast) kept[static_cast<size_t>(c)] = columns[static_cast<size_t>(c + k)];
  }
  const auto found = findMemoryColumns(lane, totals, view.columns(newFirst, newLast));
  std::copy(found.begin(), found.end(), kept.begin() + newFirst);
  columns = std::move(kept);
  return true;
}

void MemoryColumnCache::Entry::describe(const trace::RoleTrack& lane, const ColumnSpan& view) {
  samples = lane.size();
  firstNs = lane.empty() ? 0 : lane.time(0);
  lastNs = lane.empty() ? 0 : lane.time(lane.size() - 1);
  span = view;
}

MemoryColumnCache::Entry& MemoryColumnCache::entryOf(const trace::RoleTrack& samples) {
  // Lanes of sessions long closed would pile up: a few hundred lanes are kept at the most.
  if (entries_.size() > 512 && !entries_.count(&samples)) entries_.clear();
  return entries_[&samples];
}

const std::vector<size_t>& MemoryColumnCache::columns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                                      const ColumnSpan& span) {
  Entry& e = entryOf(samples);
  if (e.holds(samples, span)) {
    if (!e.fresh) ++kept_;
    e.fresh = false;
    return e.columns;
  }
  ++found_;
  if (e.find(samples, totals, span)) ++moved_;
  e.describe(samples, span);
  return e.columns;
}

void MemoryColumnCache::findAll(const std::vector<MemoryLane>& lanes, const ColumnSpan& span) {
  // The stale lanes' entries, made here on this thread: the workers only fill them.
  std::vector<std::pair<const MemoryLane*, Entry*>> stale;
  for (const auto& lane : lanes) {
    if (entries_.size() > 512 && !entries_.count(lane.samples)) return;  // columns() will clear first
    Entry& e = entries_[lane.samples];
    const bool listed = std::any_of(stale.begin(), stale.end(), [&](const auto& s) { return s.second == &e; });
    if (!listed && !e.holds(*lane.samples, span)) stale.emplace_back(&lane, &e);
  }
  if (stale.size() < 2) return;  // one lane: columns() searches it as it draws
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < stale.size(); i = next++) {
      Entry& e = *stale[i].second;
      if (e.find(*stale[i].first->samples, *stale[i].first->totals, span)) ++moved_;
    }
  };
  const size_t helpers = std::min<size_t>(stale.size(), std::max(1u, std::thread::hardware_concurrency())) - 1;
  std::vector<std::thread> threads;
  for (size_t h = 0; h < helpers; ++h) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (auto& [lane, e] : stale) {
    e->describe(*lane->samples, span);
    e->fresh = true;
    ++found_;
  }
}

}  // namespace shardscope::ui
