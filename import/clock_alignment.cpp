// Ranks of a job recorded on several hosts: each host's profiler has its own clock. Each rank is
// moved onto rank 0's, from the collectives it ran with a rank already placed, or from its messages.
// See Note [clock alignment] in trace/rank_clock.h.
#include "import/clock_alignment.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace {

// b's clock against a's: add shiftNs to b's times; boundNs, how far the evidence straggles
// around it. All zero: the clocks may agree, and b keeps its own.
struct ClockOffset {
  int64_t shiftNs = 0, boundNs = 0;
  int64_t atNs = 0;  // when, on the rank's own clock: its first end (or message)
};

// The collectives two ranks both took part in, as each ran them ([begin, end] on its own clock),
// paired in order within each group they share: a 2-D job's ranks 0 and 1 share a tensor group
// and not a data group, and pairing all their collectives in order would pair rank 0's data group's
// with rank 1's (on an H200's 2 x 2 trace, a false 7 ms shift of rank 1). Not sends and recvs (a
// pipeline's stages run different numbers of them), nor broadcasts (a root can be done before the
// others begin). A group whose counts differ on the two ranks is left out.
struct SharedCollectives {
  std::vector<int64_t> aBegin, aEnd, bBegin, bEnd;
};

// Whether rank `rank`'s collective `e` was one `other` took part in too. worldKnown false: the
// world's collectives hide sub-groups' (a Gloo trace of a job with sub-groups), and none is.
bool ranWith(const Event& e, int rank, int other, int worldRanks, int tensorRanks, bool worldKnown) {
  if (e.kind != EventKind::Collective || e.processGroup >= kProcessGroupCount) return false;
  // Of no recorded step (a trace's kernels launched before its window): each rank's window caught
  // its own number of them.
  if (e.step == kIssuedBeforeRecording) return false;
  const auto op = static_cast<CollectiveOp>(e.op);
  if (isPointToPoint(op) || op == CollectiveOp::Broadcast) return false;
  const auto group = static_cast<ProcessGroup>(e.processGroup);
  // A world collective of fewer ranks is one whose ranks no mesh row or column holds (import notes'
  // offGrid): who its members were is not known.
  if (group == ProcessGroup::World) return worldKnown && e.worldSize == worldRanks;
  const auto members = processGroupMembers(group, rank, e.worldSize, worldRanks, tensorRanks);
  return std::find(members.begin(), members.end(), other) != members.end();
}

SharedCollectives sharedCollectives(const std::vector<std::vector<Event>>& ranks, int a, int b, int tensorRanks,
                                    bool worldKnown) {
  const int world = static_cast<int>(ranks.size());
  // Each rank's times in one pass, by group; then the groups whose counts agree, one after another.
  std::array<SharedCollectives, kProcessGroupCount> groups;
  for (const auto& e : ranks[a]) {
    if (!ranWith(e, a, b, world, tensorRanks, worldKnown)) continue;
    groups[e.processGroup].aBegin.push_back(e.beginNs);
    groups[e.processGroup].aEnd.push_back(e.endNs);
  }
  for (const auto& e : ranks[b]) {
    if (!ranWith(e, b, a, world, tensorRanks, worldKnown)) continue;
    groups[e.processGroup].bBegin.push_back(e.beginNs);
    groups[e.processGroup].bEnd.push_back(e.endNs);
  }
  SharedCollectives out;
  for (auto& group : groups) {
    if (group.aEnd.size() != group.bEnd.size()) continue;
    for (auto [into, from] : {std::pair{&out.aBegin, &group.aBegin},
                              {&out.aEnd, &group.aEnd},
                              {&out.bBegin, &group.bBegin},
                              {&out.bEnd, &group.bEnd}}) {
      into->insert(into->end(), from->begin(), from->end());
    }
  }
  return out;
}

int64_t median(std::vector<int64_t> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// b's clock against a's from their shared collectives: a collective ends together on every member,
// so the median difference of the ends, and how far they straggle around it (the median absolute
// deviation). Not moved where the clocks may agree: when any two ended within 1 ms (ranks of one
// host straggle by milliseconds on a busy machine, and always have some that end together), or when
// b unshifted overlaps a in every collective, as true time requires (none can end on one rank
// before another began it): ranks sharing one GPU run their NCCL kernels in the GPU's time slices,
// and end a slice apart every time (7 ms on an H200), which the 1 ms rule alone takes for another
// host.
std::optional<ClockOffset> offsetFromCollectives(const SharedCollectives& c) {
  if (c.aEnd.empty()) return std::nullopt;
  std::vector<int64_t> diffs;
  int64_t closest = INT64_MAX, lower = INT64_MIN, upper = INT64_MAX;
  for (size_t i = 0; i < c.aEnd.size(); ++i) {
    diffs.push_back(c.aEnd[i] - c.bEnd[i]);
    closest = std::min<int64_t>(closest, std::llabs(diffs.back()));
    lower = std::max(lower, c.aBegin[i] - c.bEnd[i]);
    upper = std::min(upper, c.aEnd[i] - c.bBegin[i]);
  }
  if (closest <= 1'000'000 || (lower <= 0 && upper >= 0)) return ClockOffset{};
  const int64_t shift = median(diffs);
  std::vector<int64_t> spread;
  for (const int64_t d : diffs) spread.push_back(std::llabs(d - shift));
  // The reading is dated by b's first end (the groups' lists follow each other, not time).
  return ClockOffset{shift, std::max<int64_t>(median(spread), 1), *std::min_element(c.bEnd.begin(), c.bEnd.end())};
}

// Each rank's sends and recvs in the world's group (a peer is its rank in the op's group), as
// indices into its events: found once, read again as ranks are moved.
std::vector<std::vector<size_t>> messagesOf(const std::vector<std::vector<Event>>& ranks) {
  std::vector<std::vector<size_t>> out(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (size_t i = 0; i < ranks[r].size(); ++i) {
      const Event& e = ranks[r][i];
      if (e.kind == EventKind::Collective && isPointToPoint(static_cast<CollectiveOp>(e.op)) && e.peer >= 0 &&
          static_cast<size_t>(e.worldSize) == ranks.size()) {
        out[r].push_back(i);
      }
    }
  }
  return out;
}

// When a rank's sends to `peer` began (on a GPU, when their kernel did), or its recvs from it
// ended (`op`), in order.
std::vector<int64_t> messageTimes(const std::vector<Event>& events, const std::vector<size_t>& messages,
                                  CollectiveOp op, int peer) {
  std::vector<int64_t> out;
  for (size_t i : messages) {
    const Event& e = events[i];
    if (static_cast<CollectiveOp>(e.op) == op && e.peer == peer)
      out.push_back(op == CollectiveOp::Send ? e.beginNs : e.endNs);
  }
  return out;
}

// One way, a quickest message as slow as this is taken for latency, not for another host's clock:
// on one host a loaded scheduler wakes a waiting receiver a few time slices late (3.7 ms for the
// quickest of 20 in a busy CI run), and hosts whose clocks NTP keeps agree closer than this.
constexpr int64_t kOneWayLatencyNs = 20'000'000;

// Rank b's clock against placed rank a's, from the messages between them, paired in order (as c10d
// delivers them between two ranks). A message arrives after it was sent: a recv ends after its
// send began, in true time, however late either side ran (a send's end is no such bound: a send of
// a few bytes ends once they are written, or later when its process is descheduled). So each of
// a's sends to b bounds b's shift from below, each of b's sends to a from above, and the message
// whose receiver was already waiting bounds it closest, to within its latency (NTP keeps its
// least-delayed samples alike). The shift is the tightest bound, or the middle of the two, and its
// uncertainty half the gap between them; with one direction only, the messages' median delay
// beyond the quickest one's (the quickest one's own latency is not known). Not moved where the
// bounds allow the clocks to agree (one direction: the bound within kOneWayLatencyNs of 0);
// none where they contradict each other (messages paired wrongly, such as differently tagged ones
// posted at once, or a recv timed by its launch, not its arrival).
std::optional<ClockOffset> offsetFromMessages(const std::vector<std::vector<Event>>& ranks,
                                              const std::vector<std::vector<size_t>>& messages, int a, int b) {
  const auto fromA = messageTimes(ranks[a], messages[a], CollectiveOp::Send, b);
  const auto atB = messageTimes(ranks[b], messages[b], CollectiveOp::Recv, a);
  const auto fromB = messageTimes(ranks[b], messages[b], CollectiveOp::Send, a);
  const auto atA = messageTimes(ranks[a], messages[a], CollectiveOp::Recv, b);
  if (fromA.size() != atB.size() || fromB.size() != atA.size() || fromA.size() + fromB.size() == 0) return std::nullopt;
  std::vector<int64_t> below, above;  // each message's bound on b's shift
  for (size_t i = 0; i < fromA.size(); ++i) below.push_back(fromA[i] - atB[i]);
  for (size_t i = 0; i < fromB.size(); ++i) above.push_back(atA[i] - fromB[i]);
  const int64_t lower = below.empty() ? INT64_MIN : *std::max_element(below.begin(), below.end());
  const int64_t upper = above.empty() ? INT64_MAX : *std::min_element(above.begin(), above.end());
  if (lower > upper) return std::nullopt;
  ClockOffset offset;
  offset.atNs = atB.empty() ? fromB.front() : atB.front();
  if (!below.empty() && !above.empty()) {
    if (lower <= 0 && upper >= 0) return ClockOffset{};  // the clocks may agree: one host's
    offset.shiftNs = lower + (upper - lower) / 2;
    offset.boundNs = std::max<int64_t>((upper - lower) / 2, 1);
    return offset;
  }
  offset.shiftNs = below.empty() ? upper : lower;
  if (std::llabs(offset.shiftNs) <= kOneWayLatencyNs) return ClockOffset{};
  std::vector<int64_t> delays;  // how much later than the tightest each message's bound lies
  for (int64_t d : below) delays.push_back(lower - d);
  for (int64_t d : above) delays.push_back(d - upper);
  std::nth_element(delays.begin(), delays.begin() + static_cast<std::ptrdiff_t>(delays.size() / 2), delays.end());
  offset.boundNs = std::max<int64_t>(delays[delays.size() / 2], 1);
  return offset;
}

void shiftRank(std::vector<Event>& events, int64_t shift) {
  for (auto& e : events) {
    e.beginNs += shift;
    if (e.endNs != 0) e.endNs += shift;
    if (e.issueNs != 0) e.issueNs += shift;
  }
}

// The tensor groups' size, which places a hybrid job's shard and replicate groups (1 without --tp).
int tensorRanksIn(const std::vector<std::vector<Event>>& ranks) {
  int tensorRanks = 1;
  for (const auto& rank : ranks) {
    for (const auto& e : rank) tensorRanks = tensorRanksOf(e, tensorRanks);
  }
  return tensorRanks;
}

// Each rank not yet placed, from the first placed rank `offsetOf` finds its clock against;
// `place` records and applies it. Whether any was placed.
template <typename OffsetOf, typename Place>
bool placeFromPlaced(size_t count, std::vector<bool>& placed, OffsetOf offsetOf, Place place) {
  bool any = false;
  for (size_t b = 1; b < count; ++b) {
    for (size_t a = 0; a < count && !placed[b]; ++a) {
      if (!placed[a]) continue;
      if (const auto offset = offsetOf(a, b)) {
        place(b, *offset);
        any = true;
      }
    }
  }
  return any;
}

}  // namespace

void alignRankClocks(std::vector<std::vector<Event>>& ranks, std::string& clocks, std::vector<RankClock>& rankClocks,
                     bool worldCollectivesKnown) {
  rankClocks.assign(ranks.size(), RankClock{});
  std::vector<bool> placed(ranks.size(), false);
  placed[0] = true;
  std::string basis;
  auto place = [&](size_t r, const ClockOffset& offset) {
    placed[r] = true;
    if (offset.shiftNs == 0) return;
    Event reading;
    reading.beginNs = offset.atNs;
    reading.endNs = offset.atNs + offset.shiftNs;
    reading.uncertaintyNs = offset.boundNs;
    rankClocks[r].add(reading);
    shiftRank(ranks[r], offset.shiftNs);
    char text[200];
    std::snprintf(text, sizeof text, "rank %zu shifted by %+.6f s onto rank 0's clock (aligned on %s)\n", r,
                  static_cast<double>(offset.shiftNs) / 1e9, basis.c_str());
    clocks += text;
  };
  const int tensorRanks = tensorRanksIn(ranks);
  auto byCollectives = [&](size_t a, size_t b) {
    const auto shared =
        sharedCollectives(ranks, static_cast<int>(a), static_cast<int>(b), tensorRanks, worldCollectivesKnown);
    basis = "its " + std::to_string(shared.bEnd.size()) + " collectives' ends" +
            (a == 0 ? "" : " with rank " + std::to_string(a));
    return offsetFromCollectives(shared);
  };
  while (placeFromPlaced(ranks.size(), placed, byCollectives, place)) {}
  const auto messages = messagesOf(ranks);
  auto byMessages = [&](size_t a, size_t b) {
    basis = "its messages with rank " + std::to_string(a);
    return offsetFromMessages(ranks, messages, static_cast<int>(a), static_cast<int>(b));
  };
  while (placeFromPlaced(ranks.size(), placed, byMessages, place)) {}
  if (std::none_of(rankClocks.begin(), rankClocks.end(), [](const RankClock& c) { return c.measured(); })) {
    rankClocks.clear();
  }
}

}  // namespace shardscope::import
