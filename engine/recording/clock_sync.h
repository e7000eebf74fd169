// One clock for a job across hosts: each rank's offset to rank 0's clock, measured as NTP does
// (Mills, RFC 5905: the offset from a request's send and receive times and the reply's, with the
// round trip as its error bound) through the rendezvous store every rank already reaches. Rank 0
// answers each other rank's pings in turn; a rank keeps the exchange with the shortest round trip.
// How the readings are applied: see Note [clock alignment] in trace/rank_clock.h.
#pragma once

#include <cstdint>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace shardscope::engine {

struct ClockReading {
  int64_t localNs = 0;        // a moment on this rank's clock (trace::nowNs)
  int64_t rank0Ns = 0;        // the same moment on rank 0's
  int64_t uncertaintyNs = 0;  // half the round trip it was measured in (0 on rank 0; -1: no reply read)
};

// Every rank of the world calls it at the same point (after the rendezvous, then between steps when
// the ranks agree on it): rank 0 answers `exchanges` pings from each other rank, the others send
// them. `round` numbers the calls (0 first), each with keys of its own, removed once read.
ClockReading measureClockToRank0(c10d::Store& store, int rank, int worldSize, int round = 0, int exchanges = 8);

// The readings after the first, every `everyNs` between steps and once more at the end, agreed on
// without a collective of their own (a recorded run's traffic stays the run's): when the time has
// come on its clock, rank 0 names a step two ahead in the store; every other rank looks for that
// name after its steps (once half the time has passed on its own clock, so a long period costs no
// store traffic most steps). No rank can pass the named step unseen: finishing the step before it
// takes that step's collectives, which rank 0 joins only after naming it.
class ClockRounds {
 public:
  ClockRounds(c10::intrusive_ptr<c10d::Store> store, int rank, int worldSize, int64_t everyNs);
  ~ClockRounds();

  // After step `step`: whether every rank measures now (the same answer on every rank). Throws
  // when this rank learned of a round too late to take part (rather than leave rank 0 waiting).
  bool dueAfter(int step);
  // The next reading (the first when the ranks are up, then those dueAfter names, then the last at
  // the end); every rank calls it together. Rank 0 answers each other rank's 8 pings in turn: 3
  // store operations a ping, about 1,500 round trips to the store for 64 ranks, every rank waiting.
  ClockReading measure();

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_ = 0, worldSize_ = 1;
  int64_t everyNs_ = 0;
  int64_t lastNs_ = 0;      // when the last reading ended, on this rank's clock
  int round_ = 0;           // readings so far
  int announcedStep_ = -1;  // the step after which the next round runs, once known
  std::string announceKey() const;
  int readAnnouncement(int step);
};

}  // namespace shardscope::engine
