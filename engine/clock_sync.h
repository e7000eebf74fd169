// One clock for a job across hosts: each rank's offset to rank 0's clock, measured as NTP does
// (Mills, RFC 5905: the offset from a request's send and receive times and the reply's, with the
// round trip as its error bound) through the rendezvous store every rank already reaches. Rank 0
// answers each other rank's pings in turn; a rank keeps the exchange with the shortest round trip.
#pragma once

#include <cstdint>

namespace c10d {
class Store;
}

namespace shardscope {

struct ClockReading {
  int64_t localNs = 0;        // a moment on this rank's clock (trace::nowNs)
  int64_t rank0Ns = 0;        // the same moment on rank 0's
  int64_t uncertaintyNs = 0;  // half the round trip it was measured in (0 on rank 0; -1: no reply read)
};

// Every rank of the world calls it once, at the same point (after the rendezvous): rank 0 answers
// `exchanges` pings from each other rank, the others send them.
ClockReading measureClockToRank0(c10d::Store& store, int rank, int worldSize, int exchanges = 8);

}  // namespace shardscope
