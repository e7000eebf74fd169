#include "stats/stragglers.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace shardscope::stats {

namespace {

// One group of ranks: its kind and its members (in the group's own order).
using GroupKey = std::pair<int, std::vector<int>>;
// Per group, each member's issue times of the group's collectives, in the order it issued them.
using IssuesByGroup = std::map<GroupKey, std::map<int, std::vector<int64_t>>>;

// Whether `c` is one of a group's scheduled collectives whose members the recording tells.
bool inAGroupSchedule(const trace::CollectiveSpan& c, const trace::RunRecording& rec) {
  // A world collective among fewer than the world's ranks ran in a group the trace could not
  // place on the grid (import/profiler_collectives.cpp), and where the reader says the world's
  // hide sub-groups' (a Gloo trace names none), any may have: its members are unknown.
  const bool world = c.processGroup == static_cast<uint8_t>(trace::ProcessGroup::World);
  const bool unplaced = world && (c.worldSize < rec.ranks() || rec.worldCollectivesMixed());
  // One of no recorded step (a trace's kernels launched before its window began) is left out: how
  // many of those each rank's window caught differs, and matching in order would shift the rest.
  return !trace::isPointToPoint(static_cast<trace::CollectiveOp>(c.op)) && c.worldSize > 1 && !unplaced &&
         c.step != trace::kIssuedBeforeRecording;
}

// A send and its receive as a group of two, {sender, receiver}: the k-th send from one rank to
// another pairs with the k-th receive the other posted from it (NCCL pairs them in that order;
// shardscope's pipeline, and PyTorch's, issue them so).
constexpr int kPointToPoint = -1;

// The global rank of `c`'s peer (its rank in the group), or -1 where it was not recorded.
int peerOf(const trace::CollectiveSpan& c, int rank, const trace::RunRecording& rec) {
  if (c.peer < 0 || c.worldSize < 2) return -1;
  const auto members = trace::processGroupMembers(static_cast<trace::ProcessGroup>(c.processGroup), rank, c.worldSize,
                                                  rec.ranks(), rec.tensorRanks(), rec.pipeRanks());
  return c.peer < static_cast<int32_t>(members.size()) ? members[static_cast<size_t>(c.peer)] : -1;
}

void addPointToPoint(const trace::RunRecording& rec, IssuesByGroup& out) {
  for (int r = 0; r < rec.ranks(); ++r) {
    for (const auto& c : rec.rank(r).collectives) {
      const auto op = static_cast<trace::CollectiveOp>(c.op);
      const int peer = trace::isPointToPoint(op) ? peerOf(c, r, rec) : -1;
      if (peer < 0 || peer == r || peer >= rec.ranks()) continue;
      const bool sends = op == trace::CollectiveOp::Send;
      out[{kPointToPoint, sends ? std::vector<int>{r, peer} : std::vector<int>{peer, r}}][r].push_back(c.issueNs);
    }
  }
}

IssuesByGroup issuesByGroup(const trace::RunRecording& rec) {
  IssuesByGroup out;
  for (int r = 0; r < rec.ranks(); ++r) {
    // A rank's collectives fall in a few groups, each told by its kind and size: its members are
    // worked out once per rank, not once per collective. (The maps' nodes do not move.)
    std::map<std::pair<int, int>, std::vector<int64_t>*> lists;
    for (const auto& c : rec.rank(r).collectives) {
      if (!inAGroupSchedule(c, rec)) continue;
      auto& list = lists[{c.processGroup, c.worldSize}];
      if (!list) {
        const auto group = static_cast<trace::ProcessGroup>(c.processGroup);
        GroupKey key{c.processGroup, trace::processGroupMembers(group, r, c.worldSize, rec.ranks(), rec.tensorRanks(),
                                                                rec.pipeRanks())};
        list = &out[std::move(key)][r];
      }
      list->push_back(c.issueNs);
    }
  }
  addPointToPoint(rec, out);
  // A timeline holds them in the order they began: nearly always the order they were issued in.
  for (auto& [key, ranks] : out) {
    for (auto& [rank, issues] : ranks) {
      if (!std::is_sorted(issues.begin(), issues.end())) std::sort(issues.begin(), issues.end());
    }
  }
  return out;
}

// 5 % of rank 0's median step, at least 50 us: how much later than every other member the last
// must arrive to count as the straggler.
int64_t noiseFloorNs(const trace::RunRecording& rec) {
  constexpr int64_t kMinimumNs = 50000;
  if (rec.ranks() == 0 || rec.rank(0).steps.empty()) return kMinimumNs;
  std::vector<int64_t> steps;
  for (const auto& s : rec.rank(0).steps) steps.push_back(trace::activeStepNs(s));
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
  return std::max(kMinimumNs, steps[steps.size() / 2] / 20);
}

// One collective of one group: each member's issue time, and who issued it last.
struct Arrival {
  const std::vector<int>* members = nullptr;
  std::vector<int64_t> issueNs;  // per member, in members' order
  int last = -1;                 // -1: a tie at the last
  int64_t lastIssueNs = INT64_MIN;
  bool clear = false;  // the last came more than the noise floor after every other member
};

// Collective `k` of a group whose members' issue times are `issues` (in members' order), into `a`.
void arrivalOf(const std::vector<const std::vector<int64_t>*>& issues, size_t k, int64_t floorNs, Arrival& a) {
  a.last = -1;
  a.lastIssueNs = INT64_MIN;
  int64_t secondIssue = INT64_MIN;
  for (size_t i = 0; i < issues.size(); ++i) {
    const int64_t t = (*issues[i])[k];
    a.issueNs[i] = t;
    if (t > a.lastIssueNs) {
      secondIssue = a.lastIssueNs;
      a.lastIssueNs = t;
      a.last = (*a.members)[i];
    } else if (t > secondIssue) {
      secondIssue = t;
    }
  }
  if (secondIssue == a.lastIssueNs) a.last = -1;  // a tie at the last is no one's
  a.clear = a.last >= 0 && a.lastIssueNs - secondIssue > floorNs;
}

// Every collective that all the members of its group recorded, in each group's order.
template <typename Visit>
void forEachArrival(const trace::RunRecording& recording, Visit&& visit) {
  const int64_t floorNs = noiseFloorNs(recording);
  for (const auto& [key, issues] : issuesByGroup(recording)) {
    const std::vector<int>& members = key.second;
    // Only what every member recorded: a rank that died, or a group member out of range, ends it.
    std::vector<const std::vector<int64_t>*> memberIssues;
    size_t common = SIZE_MAX;
    for (int m : members) {
      const auto it = issues.find(m);
      const bool recorded = it != issues.end() && m < recording.ranks();
      common = std::min(common, recorded ? it->second.size() : size_t{0});
      memberIssues.push_back(recorded ? &it->second : nullptr);
    }
    if (members.size() < 2 || common == SIZE_MAX) continue;
    Arrival a;  // one, filled for each collective in turn
    a.members = &members;
    a.issueNs.resize(members.size());
    for (size_t k = 0; k < common; ++k) {
      arrivalOf(memberIssues, k, floorNs, a);
      // A send waits for no receive (it is buffered, or queued on the device): only a receive
      // posted before its send waited, for the sender. Otherwise the pair counts, with no last.
      if (key.first == kPointToPoint && a.last != members[0]) {
        a.last = -1;
        a.clear = false;
        a.lastIssueNs = a.issueNs[0];  // the sender waited for nothing
      }
      visit(a);
    }
  }
}

// The time covered by `intervals` (begin, end), each instant once.
int64_t coveredNs(std::vector<std::pair<int64_t, int64_t>>& intervals) {
  if (!std::is_sorted(intervals.begin(), intervals.end())) std::sort(intervals.begin(), intervals.end());
  int64_t covered = 0, reached = INT64_MIN;
  for (const auto& [begin, end] : intervals) {
    const int64_t from = std::max(begin, reached);
    if (end > from) covered += end - from;
    reached = std::max(reached, end);
  }
  return covered;
}

}  // namespace

std::vector<RankStraggling> stragglingOf(const trace::RunRecording& recording) {
  std::vector<RankStraggling> out(static_cast<size_t>(recording.ranks()));
  // Each member's waits for each last rank: (last, waiter) -> [issued, the last issued).
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> waits;
  forEachArrival(recording, [&](const Arrival& a) {
    for (int m : *a.members) ++out[static_cast<size_t>(m)].collectives;
    if (a.last < 0) return;
    for (size_t i = 0; i < a.members->size(); ++i) {
      if (a.issueNs[i] < a.lastIssueNs) waits[{a.last, (*a.members)[i]}].emplace_back(a.issueNs[i], a.lastIssueNs);
    }
    if (!a.clear) return;
    for (int m : *a.members) ++out[static_cast<size_t>(m)].withAStraggler;
    ++out[static_cast<size_t>(a.last)].lastArrivals;
  });
  for (auto& [who, intervals] : waits) {
    out[static_cast<size_t>(who.first)].waitCausedSeconds += static_cast<double>(coveredNs(intervals)) / 1e9;
  }
  return out;
}

std::vector<std::vector<CollectiveWait>> collectiveWaits(const trace::RunRecording& recording) {
  std::vector<std::vector<CollectiveWait>> out(static_cast<size_t>(recording.ranks()));
  forEachArrival(recording, [&](const Arrival& a) {
    for (size_t i = 0; i < a.members->size(); ++i) {
      out[static_cast<size_t>((*a.members)[i])].push_back({a.issueNs[i], a.lastIssueNs, a.last, a.clear});
    }
  });
  return out;
}

}  // namespace shardscope::stats
