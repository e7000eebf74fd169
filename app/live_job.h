// The app's Listen mode: a job someone else launched, drawn live as its ranks stream to the
// collector (`shardscope listen --window`). The collector's sink puts each rank's events into one
// session of the window's store, on rank 0's clock (Note [clock alignment] in trace/rank_clock.h),
// as the app's own runs fill theirs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/recording/event_collector.h"
#include "trace/rank_clock.h"
#include "trace/stream_merger.h"
#include "ui/session_store.h"

namespace shardscope::app {

class LiveJobSink final : public engine::CollectorSink {
 public:
  // Adds the job's session to `store` (titled by where it listens) and fills it from then on,
  // holding at most `detailEvents` over its ranks in detail (--window-events; 0: no bound): past it
  // the oldest steps fold, as a long run's do in the app. The collector keeps every event on disk.
  // `keptIn`: the collector's directory.
  LiveJobSink(ui::SessionStore& store, const std::string& listeningOn, size_t detailEvents = 0,
              const std::string& keptIn = "");

  void rankJoined(int rank, int world, const std::string& configJson, const std::string& peer) override;
  void rankEvents(int rank, const std::vector<trace::Event>& events) override;
  void rankEnded(int rank, bool finished, const std::string& how) override;
  // The collector has stopped: whatever a rank's reordering still holds goes in.
  void finish(int collectorExit);

 private:
  struct Rank {
    std::unique_ptr<trace::StreamMerger> order;  // this rank's events in time order (as a controller's)
    trace::RankClock clock;                      // its readings so far (the latest holds for what follows it)
    // Its events before its clock was measured (the clock_offset line comes once its ranks are
    // up): held, and shifted with the rest when it comes.
    bool clockKnown = false;
    std::vector<trace::Event> beforeClock;
    std::string placement;
  };
  Rank& rankState(int rank);
  void order(Rank& r, trace::Event e);  // on rank 0's clock, into the rank's merger
  void refreshDevice();                 // under the store's lock

  ui::SessionStore& store_;
  std::string listeningOn_;
  size_t detailEvents_ = 0;
  bool bounded_ = false;  // the budget applied, once the job's world is known
  int session_ = -1;
  std::vector<Rank> ranks_;
  std::vector<trace::Event> released_;  // what the rank mergers let go of, added under one lock
  std::string ended_;                   // the ranks that did not finish, and how
};

}  // namespace shardscope::app
