// Observing a launched run: reads every rank's event pipe, merges the events into the recording in
// time order, counts the steps every rank finished, serves the step gate, and stops the run (every
// rank asked, then killed after a grace) when the caller asks, a rank fails, falls silent, or the
// loss stops being finite. Returns once every rank has exited and closed its pipe; never blocks on
// a rank for longer than a poll (100 ms).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/launch/rank_processes.h"
#include "engine/launch/run_types.h"

namespace shardscope::engine {

// Why observation ended, for the conclusion to word: at most one of these explains a stop.
struct RunObservation {
  bool stoppedByUser = false;        // shouldStop said so
  std::string diverged;              // the message for a non-finite loss, or empty
  std::string stalled;               // which rank fell silent and what it did last, or empty
  std::vector<int> failureOrder;     // ranks that failed, in the order they were seen to
  std::map<int, double> lossOfStep;  // step -> loss, of steps some ranks but not all finished
};

// Fills `result`'s per-rank facts (placements, device, step times), the losses of the steps every
// rank was seen to finish, the merged events (into the sink's recording, or result.recording) and
// the merger's out-of-order count.
RunObservation observeRanks(const config::RunConfig& config, std::vector<RankProcess>& ranks,
                            const RunCallbacks& callbacks, const RecordingSink& sink, RunResult& result);

}  // namespace shardscope::engine
