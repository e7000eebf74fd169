// The textbook ring schedule of a collective among N ranks (Patarasuk and Yuan, "Bandwidth optimal
// all-reduce algorithms for clusters of workstations", 2009; the schedule of NCCL's ring): the data
// is cut into N chunks and every step each rank sends one chunk to its right neighbour.
//   all-reduce:     N-1 reduce-scatter steps (the receiver adds), then N-1 all-gather steps
//                   (the receiver copies): 2(N-1) steps, each rank sends 2(N-1)/N x size.
//   reduce-scatter: N-1 steps; rank r ends with chunk r summed over all ranks; (N-1)/N x size.
//   all-gather:     N-1 steps; rank r starts with chunk r, every rank ends with all; (N-1)/N x size.
// "size" is the collective's size as nccl-tests counts it (trace::collectiveSizeBytes). This is the
// schedule the app animates; a backend may run another algorithm (Gloo's chunked ring or halving-
// doubling, NCCL's tree), so views that draw it name it as the ring schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/events.h"
#include "trace/spans.h"

namespace shardscope::trace {

struct RingTransfer {
  int from = 0;
  int to = 0;           // (from + 1) mod N
  int chunk = 0;        // which of the N chunks
  bool reduce = false;  // the receiver adds it (reduce-scatter phase) rather than copies it
};

struct RingSchedule {
  CollectiveOp op = CollectiveOp::AllReduce;
  int ranks = 0;
  int64_t sizeBytes = 0;
  int64_t chunkBytes = 0;                        // size / N, rounded up
  std::vector<std::vector<RingTransfer>> steps;  // one transfer per rank per step
  int reduceSteps = 0;                           // the first steps that reduce (all-reduce: N-1; reduce-scatter: N-1)

  bool animatable() const { return ranks >= 2 && !steps.empty(); }
  // Bytes one rank sends (and receives) over the whole collective.
  int64_t bytesSentPerRank() const { return static_cast<int64_t>(steps.size()) * chunkBytes; }
};

// What one rank sends and receives in one collective of `sizeBytes` among `ranks` under the ring
// schedule: all-reduce 2(N-1)/N x size each way, all-gather and reduce-scatter (N-1)/N x size each
// way. This is the traffic the ZeRO paper counts (ZeRO-2 moves what DDP moves, ZeRO-3 1.5x), not
// the size: an all-reduce of 1 GB among 2 ranks sends 1 GB per rank, among 8 ranks 1.75 GB.
// Broadcast (pipelined along the chain: every rank but the last sends the size, every rank but the
// root receives it) is given as the average over ranks, (N-1)/N x size; barrier moves nothing.
// All-to-all (read from PyTorch's traces) sends (N-1)/N of its input, the parts of it other ranks
// own, under any schedule; send and recv move their message one way, to or from one peer.
struct RankTraffic {
  int64_t sentBytes = 0;
  int64_t receivedBytes = 0;
};
RankTraffic ringTrafficPerRank(CollectiveOp op, int ranks, int64_t sizeBytes);

// How a collective's sent and received bytes are counted, for a label: "ring schedule" for the
// ring's collectives, "all but its own part" for an all-to-all, "one way" for a send or recv.
const char* trafficBasis(CollectiveOp op);

// The same for one recorded collective, in its group. An all-to-all's splits may be uneven (an
// MoE's tokens per expert): where its own part is recorded (Event::ownPartBytes) it sends its input less
// that and receives its output less that; else (N-1)/N of its input and of its output.
RankTraffic collectiveTraffic(const Event& collective);
RankTraffic collectiveTraffic(const CollectiveSpan& collective);

// Empty (no steps) for broadcast, barrier, all-to-all, send and recv, or fewer than two ranks.
RingSchedule ringSchedule(CollectiveOp op, int ranks, int64_t sizeBytes);

// What each rank holds of each chunk after the first `stepsDone` steps: the number of ranks whose
// contribution it holds (N: complete), or 0 for nothing (all-gather's chunks not yet received).
// [rank][chunk].
std::vector<std::vector<int>> ringHoldingsAfter(const RingSchedule& schedule, int stepsDone);

}  // namespace shardscope::trace
