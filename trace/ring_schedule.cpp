#include "trace/ring_schedule.h"

#include <algorithm>

namespace shardscope::trace {

namespace {

int wrap(int value, int n) { return ((value % n) + n) % n; }

// One ring step: rank r sends chunk chunkOf(r) to r + 1.
template <typename ChunkOf>
std::vector<RingTransfer> ringStep(int n, bool reduce, ChunkOf chunkOf) {
  std::vector<RingTransfer> step;
  for (int r = 0; r < n; ++r) step.push_back({r, wrap(r + 1, n), wrap(chunkOf(r), n), reduce});
  return step;
}

}  // namespace

RankTraffic ringTrafficPerRank(CollectiveOp op, int ranks, int64_t sizeBytes) {
  // One peer, whatever the group: the message leaves the sender and arrives at the receiver.
  if (op == CollectiveOp::Send) return {std::max<int64_t>(sizeBytes, 0), 0};
  if (op == CollectiveOp::Recv) return {0, std::max<int64_t>(sizeBytes, 0)};
  if (ranks < 2 || sizeBytes <= 0) return {};
  // Exact in integers: (N-1) x size / N, rounded to the nearest byte (chunks differ by at most one
  // element when N does not divide the size; their sum is what is sent).
  const auto share = [&](int64_t numerator) { return (numerator * sizeBytes + ranks / 2) / ranks; };
  int64_t each = 0;
  // All-to-all: every rank's input split N ways, all but its own part sent straight to its owner
  // (not a ring: any schedule moves these bytes); received as much when the splits are even.
  switch (op) {
    case CollectiveOp::AllReduce:
      each = share(2 * int64_t{ranks - 1});
      break;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::Broadcast:
    case CollectiveOp::AllToAll:
      each = share(ranks - 1);
      break;
    case CollectiveOp::Barrier:
    case CollectiveOp::Send:
    case CollectiveOp::Recv:
      each = 0;
      break;
  }
  return {each, each};
}

const char* trafficBasis(CollectiveOp op) {
  if (op == CollectiveOp::AllToAll) return "all but its own part";
  return isPointToPoint(op) ? "one way" : "ring schedule";
}

namespace {

template <class Collective>
RankTraffic trafficOf(const Collective& c) {
  const auto op = static_cast<CollectiveOp>(c.op);
  if (op == CollectiveOp::AllToAll && c.ownPartBytes >= 0) {  // its own part known: the rest leaves and arrives
    return {std::max<int64_t>(c.bytes - c.ownPartBytes, 0), std::max<int64_t>(c.bytesOut - c.ownPartBytes, 0)};
  }
  RankTraffic t = ringTrafficPerRank(op, c.worldSize, collectiveSizeBytes(c));
  if (op == CollectiveOp::AllToAll) t.receivedBytes = ringTrafficPerRank(op, c.worldSize, c.bytesOut).receivedBytes;
  return t;
}

}  // namespace

RankTraffic collectiveTraffic(const Event& c) { return trafficOf(c); }

RankTraffic collectiveTraffic(const CollectiveSpan& c) { return trafficOf(c); }

RingSchedule ringSchedule(CollectiveOp op, int ranks, int64_t sizeBytes) {
  RingSchedule s;
  s.op = op;
  s.ranks = ranks;
  s.sizeBytes = sizeBytes;
  const int n = ranks;
  if (n < 2) return s;
  s.chunkBytes = (sizeBytes + n - 1) / n;
  switch (op) {
    case CollectiveOp::AllReduce:
      // Reduce-scatter phase: after N-1 steps rank r holds chunk r+1 complete; the all-gather
      // phase then passes each complete chunk on around the ring.
      for (int k = 0; k < n - 1; ++k) s.steps.push_back(ringStep(n, true, [&](int r) { return r - k; }));
      for (int k = 0; k < n - 1; ++k) s.steps.push_back(ringStep(n, false, [&](int r) { return r + 1 - k; }));
      s.reduceSteps = n - 1;
      break;
    case CollectiveOp::ReduceScatter:
      // Shifted by one so rank r ends with chunk r, as c10d's reduce_scatter hands it out.
      for (int k = 0; k < n - 1; ++k) s.steps.push_back(ringStep(n, true, [&](int r) { return r - k - 1; }));
      s.reduceSteps = n - 1;
      break;
    case CollectiveOp::AllGather:
      for (int k = 0; k < n - 1; ++k) s.steps.push_back(ringStep(n, false, [&](int r) { return r - k; }));
      break;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Barrier:
    case CollectiveOp::AllToAll:
    case CollectiveOp::Send:
    case CollectiveOp::Recv:
      break;
  }
  return s;
}

std::vector<std::vector<int>> ringHoldingsAfter(const RingSchedule& s, int stepsDone) {
  const int n = s.ranks;
  std::vector<std::vector<int>> held(static_cast<size_t>(std::max(n, 0)),
                                     std::vector<int>(static_cast<size_t>(std::max(n, 0)), 0));
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) {
      // Reductions start from every rank's own contribution; an all-gather from its own chunk.
      held[r][c] = s.op == CollectiveOp::AllGather ? (c == r ? 1 : 0) : 1;
    }
  }
  const int last = std::clamp(stepsDone, 0, static_cast<int>(s.steps.size()));
  for (int k = 0; k < last; ++k) {
    auto before = held;  // every transfer of a step happens at once
    for (const auto& t : s.steps[static_cast<size_t>(k)]) {
      const int sent = before[t.from][t.chunk];
      held[t.to][t.chunk] = t.reduce ? before[t.to][t.chunk] + sent : std::max(before[t.to][t.chunk], sent);
    }
  }
  return held;
}

}  // namespace shardscope::trace
