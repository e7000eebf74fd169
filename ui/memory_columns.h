// Which memory sample each pixel column of a memory lane shows (ui/column_peaks.h), kept between
// frames. On a long run's lane that search is a good part of a frame, so a lane's columns are kept
// for the view they were found for: a frame in which neither the view nor the lane's samples
// changed (most frames of a finished run, as its reader reads and hovers) draws from them. A view
// dragged by whole columns (the timeline pans by whole pixels) keeps the columns still in view and
// searches only those it brought in; a zoom, or samples added, searches again.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "trace/range_max.h"
#include "trace/role_track.h"
#include "ui/column_peaks.h"

namespace shardscope::ui {

// By how many whole columns `to` lies later than `from` (negative: earlier), where it is `from`
// moved by whole columns at the same zoom and width, by fewer columns than it is wide: the columns
// they share are then the same columns. Nothing otherwise (a zoom, a resize, a jump).
std::optional<int> columnsMoved(const ColumnSpan& from, const ColumnSpan& to);

// One memory lane's samples and their totals, for a search of many lanes at once.
struct MemoryLane {
  const trace::RoleTrack* samples = nullptr;
  const trace::RangeMax* totals = nullptr;
};

class MemoryColumnCache {
 public:
  // Searches, on the machine's cores at once, those of `lanes` whose kept columns do not hold for
  // `span`, and keeps what they found: the frame's lanes then draw from it. A view that moves
  // searches every lane again, and 8 lanes of 6 million samples took 7.6 ms on one core. Each lane
  // is read only: the caller holds the recording still (the window's lock) meanwhile.
  void findAll(const std::vector<MemoryLane>& lanes, const ColumnSpan& span);
  // The lane's columns for `span`: those kept if the lane and the span are unchanged, else found.
  const std::vector<size_t>& columns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                     const ColumnSpan& span);
  int64_t found() const { return found_; }  // how many lanes' columns were searched, not kept
  int64_t kept() const { return kept_; }
  int64_t moved() const { return moved_; }  // of those searched: lanes whose view was dragged

 private:
  // What the kept columns were found for: the lane's samples (their count and outer times, so a
  // lane freed and another made at its address is not taken for it) and the span.
  struct Entry {
    size_t samples = 0;
    int64_t firstNs = 0;
    int64_t lastNs = 0;
    ColumnSpan span;
    std::vector<size_t> columns;
    bool fresh = false;  // found by findAll this frame: its lane's draw is not counted as kept
    bool sameLane(const trace::RoleTrack& samples) const;  // the lane's samples are those found in
    bool holds(const trace::RoleTrack& samples, const ColumnSpan& span) const;
    // Whether the lane is unchanged and the span only `from`'s, dragged by whole columns.
    std::optional<int> dragged(const trace::RoleTrack& samples, const ColumnSpan& span) const;
    void describe(const trace::RoleTrack& samples, const ColumnSpan& span);
    // Finds `span`'s columns: only those a drag brought into view where it was one (true).
    bool find(const trace::RoleTrack& samples, const trace::RangeMax& totals, const ColumnSpan& span);
  };
  Entry& entryOf(const trace::RoleTrack& samples);
  std::unordered_map<const trace::RoleTrack*, Entry> entries_;
  int64_t found_ = 0;
  int64_t kept_ = 0;
  std::atomic<int64_t> moved_{0};
};

}  // namespace shardscope::ui
