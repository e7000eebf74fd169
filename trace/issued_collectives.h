// Each rank's last collectives as it issued them, from its CollectiveIssued events (sent before a
// collective can block), each marked finished once its Collective (the same rank and issue time)
// arrives, or failed once its CollectiveFailed does: when a run stalls or a rank dies, the
// collective every other rank waits in is known, though it never ended. Read as collective logs
// (trace/collective_log.h), so a run's hang is laid out and checked (stats/first_mismatch.h) as
// Flight Recorder dumps are.
#pragma once

#include <deque>
#include <vector>

#include "trace/collective_log.h"
#include "trace/events.h"

namespace shardscope::trace {

class IssuedCollectives {
 public:
  // `keep`: the last collectives kept per rank (a ring, as Flight Recorder's).
  explicit IssuedCollectives(int worldSize, size_t keep = 64);

  // A CollectiveIssued, Collective or CollectiveFailed event; any other is ignored.
  void add(const Event& event);
  bool empty() const;

  // The ranks' logs. A collective's group is named by its members ("shard [0, 1]"), so that the
  // shard groups of a hybrid mesh, each called "shard", are told apart.
  CollectiveLogs logs() const;

 private:
  struct Issued {
    Event event;
    bool finished = false;
    bool failed = false;
  };
  int worldSize_;
  int tensorRanks_ = 1;  // --tp's group size, as the tensor groups' collectives show it
  int pipeRanks_ = 1;    // --pp's, as the pipe groups' show it
  size_t keep_;
  std::vector<std::deque<Issued>> byRank_;
};

class RunRecording;

// The last collectives of a recording whose run failed, as a trace keeps them: its ranks'
// collective spans and the collectives the backend failed, for a trace holds no CollectiveIssued
// events. Each is numbered in its group on its rank in the order the rank issued it, which is the
// number a live run gave it as long as the recording holds every collective from the run's start;
// nothing (empty logs) where it may not (a rank's older steps folded) or where none failed.
CollectiveLogs lastCollectivesOf(const RunRecording& recording, size_t keep = 64);

}  // namespace shardscope::trace
