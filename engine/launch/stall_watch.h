// Tells a stalled rank from a busy one. Every rank's recorder thread writes at least once a second
// (a heartbeat when it has nothing else), also while the rank waits at the step gate or in a long
// collective; a rank that sends nothing at all for the limit is stopped (SIGSTOP), hung in a way
// that froze its process, or starved of any CPU. Gloo would notice only at its own timeout, minutes
// later, as a peer's error. No clock of its own: the controller passes the time in, so tests can.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "trace/events.h"

namespace shardscope::engine {

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // `limit` zero: never stalled. Every rank counts as heard at `start` (when it was started); until
  // it is first heard from (its process loads LibTorch first, slowly from a cold cache on a busy
  // host) it has `startupLimit` instead, if that is longer.
  StallWatch(int ranks, std::chrono::milliseconds limit, Clock::time_point start,
             std::chrono::milliseconds startupLimit = std::chrono::seconds(120));

  void heard(int rank, Clock::time_point now);     // any bytes from it, a heartbeat included
  void sent(int rank, const trace::Event& event);  // an event: what it was last doing
  void ended(int rank);                            // exited or closed its pipe: no longer watched

  // The first rank silent for longer than its limit, or -1 while every rank is heard from.
  int stalledRank(Clock::time_point now) const;
  // That rank's silence as one line naming it, how long, and its last event ("rank 1 sent nothing
  // for 30 s; its last event: all_gather blocks.2 began in step 15").
  std::string describeStall(int rank, Clock::time_point now) const;

 private:
  struct Watched {
    Clock::time_point lastHeard;
    std::string lastEvent;  // "all_gather blocks.2 began in step 15", or "" before any
    bool ended = false;
    bool heardOnce = false;
  };
  std::chrono::milliseconds limitOf(const Watched& rank) const;

  std::vector<Watched> ranks_;
  std::chrono::milliseconds limit_;
  std::chrono::milliseconds startupLimit_;
};

// What an event says a rank was doing, for a message: "all_gather blocks.2 began in step 15",
// "backward blocks.1 ended in step 3", "step 4 ended"; "" for events that say nothing of it.
std::string describeProgress(const trace::Event& event);

}  // namespace shardscope::engine
