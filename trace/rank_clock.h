// A rank's clock against rank 0's, from its ClockOffset readings (engine/recording/clock_sync.h: one when
// its ranks are up, then again every --clock-every seconds and at the end of the run). When the
// readings differ by more than their bounds allow, the clock drifted: the offset is interpolated
// between them (the nearest reading before the first and after the last), so the host is followed
// rather than pinned to its first reading. Otherwise they measured one offset, and the most
// precise reading (the shortest round trip) holds throughout.
//
// Note [clock alignment]
// Events are timed in ns on their host's steady clock (trace::nowNs), which every rank of a host
// shares; a GPU's work is put on it by DeviceClock (engine/recording/device_clock.h: CUDA events
// timed from one anchor event). A controller's ranks all run on its host and need nothing more.
// A job that records itself (worker --trace-dir, or a collector) may span hosts: each rank
// measures its offset to rank 0's clock NTP-style through the store (engine/recording/clock_sync.h)
// when the ranks are up, every --clock-every seconds and at the end, and sends each reading as a
// ClockOffset event. A RankClock turns the readings into a shift; a rank none of whose offsets
// exceeds its uncertainty shares rank 0's clock and is not moved (a shift by the noise would only
// misalign it). torch.profiler traces carry no readings: import/clock_alignment.cpp infers each
// rank's shift from the collectives it ran with a rank already placed (they end together), else
// from its messages' send and receive times, and keeps it as a RankClock reading too. The shift is
// added to each of the rank's times (for measured readings by shiftOntoRank0,
// trace/rank_event_files.h), and the notes and the summary's "clocks" say which ranks moved, by
// how much, to within what.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/events.h"

namespace shardscope::trace {

class RankClock {
 public:
  // A ClockOffset event: beginNs the rank's clock, endNs rank 0's at that moment, uncertaintyNs the bound
  // (-1: not measured, ignored), text the host.
  void add(const Event& clockOffset);

  // Whether any reading was measured.
  bool measured() const { return !readings_.empty(); }
  // Whether the rank is on another clock: some reading's offset exceeds what it was measured to.
  // A rank on rank 0's host is not shifted at all (see Note [clock alignment]).
  bool shifted() const { return shifted_; }
  // What to add to a time on the rank's clock to read it on rank 0's (0 unless shifted()).
  int64_t shiftAt(int64_t localNs) const;

  struct Reading {
    int64_t localNs = 0;
    int64_t offsetNs = 0;       // rank 0's clock minus the rank's
    int64_t uncertaintyNs = 0;  // half the round trip it was measured in
  };
  const std::vector<Reading>& readings() const { return readings_; }
  const std::string& host() const { return host_; }
  // Whether the readings differ by more than their bounds: the offset moved during the run.
  bool drifted() const { return drifted_; }
  // The drift between the first and last readings, in parts per million (0 with one reading).
  double driftPpm() const;
  // The largest uncertainty of any reading: the bound the merged times hold to.
  int64_t worstUncertaintyNs() const;

 private:
  std::vector<Reading> readings_;  // in the rank's time order
  std::string host_;
  bool shifted_ = false;
  bool drifted_ = false;
  Reading best_;  // the shortest round trip's
};

}  // namespace shardscope::trace
