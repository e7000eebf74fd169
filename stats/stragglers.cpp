#include "stats/stragglers.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace shardscope {

namespace {

// One group of ranks: its kind and its members (in the group's own order).
using GroupKey = std::pair<int, std::vector<int>>;

// Each rank's issue times of its group's collectives, in the order it issued them.
std::map<GroupKey, std::map<int, std::vector<int64_t>>> issuesByGroup(const trace::RunRecording& rec) {
  std::map<GroupKey, std::map<int, std::vector<int64_t>>> out;
  for (int r = 0; r < rec.ranks(); ++r) {
    std::vector<const trace::CollectiveSpan*> ordered;
    for (const auto& c : rec.rank(r).collectives) {
      // A world collective among fewer than the world's ranks ran in a group the trace could not
      // place on the grid (import/profiler_collectives.cpp), and where the reader says the world's
      // hide sub-groups' (a Gloo trace names none), any may have: its members are unknown.
      const bool world = c.processGroup == static_cast<uint8_t>(trace::ProcessGroup::World);
      const bool unplaced = world && (c.worldSize < rec.ranks() || rec.worldCollectivesMixed());
      if (!trace::isPointToPoint(static_cast<trace::CollectiveOp>(c.op)) && c.worldSize > 1 && !unplaced) {
        ordered.push_back(&c);
      }
    }
    std::stable_sort(
        ordered.begin(), ordered.end(),
        [](const trace::CollectiveSpan* a, const trace::CollectiveSpan* b) { return a->issueNs < b->issueNs; });
    for (const auto* c : ordered) {
      const auto group = static_cast<trace::ProcessGroup>(c->processGroup);
      GroupKey key{c->processGroup, trace::processGroupMembers(group, r, c->worldSize, rec.ranks(), rec.tensorRanks())};
      out[key][r].push_back(c->issueNs);
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

Arrival arrivalOf(const std::vector<int>& members, const std::map<int, std::vector<int64_t>>& issues, size_t k,
                  int64_t floorNs) {
  Arrival a;
  a.members = &members;
  int64_t secondIssue = INT64_MIN;
  for (int m : members) {
    const int64_t t = issues.at(m)[k];
    a.issueNs.push_back(t);
    if (t > a.lastIssueNs) {
      secondIssue = a.lastIssueNs;
      a.lastIssueNs = t;
      a.last = m;
    } else if (t > secondIssue) {
      secondIssue = t;
    }
  }
  if (secondIssue == a.lastIssueNs) a.last = -1;  // a tie at the last is no one's
  a.clear = a.last >= 0 && a.lastIssueNs - secondIssue > floorNs;
  return a;
}

// Every collective that all the members of its group recorded, in each group's order.
template <typename Visit>
void forEachArrival(const trace::RunRecording& recording, Visit&& visit) {
  const int64_t floorNs = noiseFloorNs(recording);
  for (const auto& [key, issues] : issuesByGroup(recording)) {
    const std::vector<int>& members = key.second;
    // Only what every member recorded: a rank that died, or a group member out of range, ends it.
    size_t common = SIZE_MAX;
    for (int m : members) {
      const auto it = issues.find(m);
      common = std::min(common, it == issues.end() || m >= recording.ranks() ? size_t{0} : it->second.size());
    }
    if (members.size() < 2 || common == SIZE_MAX) continue;
    for (size_t k = 0; k < common; ++k) visit(arrivalOf(members, issues, k, floorNs));
  }
}

// The time covered by `intervals` (begin, end), each instant once.
int64_t coveredNs(std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
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

}  // namespace shardscope
