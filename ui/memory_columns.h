// Which memory sample each pixel column of a memory lane shows: the highest in force over the
// column, found by searching the lane's samples (trace::TimeIndex for where the column starts,
// trace::RangeMax for its highest). On a long run's lane that search is most of a frame, so a
// lane's columns are kept for the view they were found for: a frame in which neither the view nor
// the lane's samples changed (most frames of a finished run, as its reader reads and hovers) draws
// from them, and a frame that moved the view or added samples searches again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
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
};

// A column before the lane's first sample shows none.
constexpr size_t kNoSample = SIZE_MAX;

// Each column's sample: the highest total among those in force over it (the one in force at its
// start and those inside it). O(width x log samples) whatever the samples in view.
std::vector<size_t> findMemoryColumns(const trace::RoleTrack& samples, const trace::RangeMax& totals,
                                      const ColumnSpan& span);

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
    bool holds(const trace::RoleTrack& samples, const ColumnSpan& span) const;
    void describe(const trace::RoleTrack& samples, const ColumnSpan& span);
  };
  Entry& entryOf(const trace::RoleTrack& samples);
  std::unordered_map<const trace::RoleTrack*, Entry> entries_;
  int64_t found_ = 0;
  int64_t kept_ = 0;
};

}  // namespace shardscope::ui
