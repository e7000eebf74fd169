#include "stats/stragglers.h"

#include <algorithm>
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
    std::vector<const trace::Event*> ordered;
    for (const auto& c : rec.rank(r).collectives) {
      if (!trace::isPointToPoint(static_cast<trace::CollectiveOp>(c.op)) && c.worldSize > 1) ordered.push_back(&c);
    }
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const trace::Event* a, const trace::Event* b) { return a->issueNs < b->issueNs; });
    for (const auto* c : ordered) {
      const auto group = static_cast<trace::ProcessGroup>(c->processGroup);
      GroupKey key{c->processGroup, trace::processGroupMembers(group, r, c->worldSize, rec.ranks())};
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

// The k-th collective of one group: who issued it last, and what the others waited for it.
void attribute(const std::vector<int>& members, const std::map<int, std::vector<int64_t>>& issues, size_t k,
               int64_t floorNs, std::vector<RankStraggling>& out) {
  int last = -1;
  int64_t lastIssue = INT64_MIN, secondIssue = INT64_MIN;
  for (int m : members) {
    const int64_t t = issues.at(m)[k];
    if (t > lastIssue) {
      secondIssue = lastIssue;
      lastIssue = t;
      last = m;
    } else if (t > secondIssue) {
      secondIssue = t;
    }
  }
  for (int m : members) ++out[static_cast<size_t>(m)].collectives;
  if (last < 0 || secondIssue == lastIssue) return;  // a tie at the last is no one's
  auto& straggler = out[static_cast<size_t>(last)];
  for (int m : members) straggler.waitCausedSeconds += static_cast<double>(lastIssue - issues.at(m)[k]) / 1e9;
  if (lastIssue - secondIssue <= floorNs) return;
  for (int m : members) ++out[static_cast<size_t>(m)].withAStraggler;
  ++straggler.lastArrivals;
}

}  // namespace

std::vector<RankStraggling> stragglingOf(const trace::RunRecording& recording) {
  std::vector<RankStraggling> out(static_cast<size_t>(recording.ranks()));
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
    for (size_t k = 0; k < common; ++k) attribute(members, issues, k, floorNs, out);
  }
  return out;
}

}  // namespace shardscope
