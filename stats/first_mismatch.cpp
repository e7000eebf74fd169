#include "stats/first_mismatch.h"

#include <algorithm>
#include <limits>
#include <map>

namespace shardscope::stats {

namespace {

using trace::CollectiveLogs;
using trace::LoggedCollective;

// One process group's entries, seen rank by rank.
struct GroupEntries {
  std::string name;
  std::vector<size_t> members;                                    // indexes into logs.ranks
  std::vector<std::map<int64_t, const LoggedCollective*>> bySeq;  // per index into logs.ranks
};

bool isMember(const CollectiveLogs& logs, const GroupEntries& group, size_t index) {
  const auto named = logs.groupRanks.find(group.name);
  if (named == logs.groupRanks.end()) return !group.bySeq[index].empty();
  return std::find(named->second.begin(), named->second.end(), logs.ranks[index].rank) != named->second.end();
}

std::vector<GroupEntries> groupsOf(const CollectiveLogs& logs) {
  std::map<std::string, GroupEntries> groups;
  for (size_t i = 0; i < logs.ranks.size(); ++i) {
    for (const auto& entry : logs.ranks[i].entries) {
      auto& group = groups[entry.group];
      group.name = entry.group;
      group.bySeq.resize(logs.ranks.size());
      group.bySeq[i][entry.seq] = &entry;
    }
  }
  std::vector<GroupEntries> out;
  for (auto& [name, group] : groups) {
    for (size_t i = 0; i < logs.ranks.size(); ++i) {
      if (isMember(logs, group, i)) group.members.push_back(i);
    }
    out.push_back(std::move(group));
  }
  return out;
}

// The numbers every member could still hold: from the latest first entry (a full buffer drops the
// oldest) to the last any member entered.
std::pair<int64_t, int64_t> comparableRange(const GroupEntries& group) {
  int64_t from = std::numeric_limits<int64_t>::min(), to = 0;
  for (size_t i : group.members) {
    if (group.bySeq[i].empty()) continue;
    from = std::max(from, group.bySeq[i].begin()->first);
    to = std::max(to, group.bySeq[i].rbegin()->first);
  }
  return {from, to};
}

std::string ranksText(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  return out;
}

// The attribute in which `odd` first differs from `usual`, in the analyzer's order; none if alike.
std::optional<MismatchKind> differenceOf(const LoggedCollective& usual, const LoggedCollective& odd) {
  if (usual.op != odd.op) return MismatchKind::OpType;
  if (usual.inputSizes != odd.inputSizes || usual.outputSizes != odd.outputSizes) return MismatchKind::Size;
  if (usual.inputDtypes != odd.inputDtypes || usual.outputDtypes != odd.outputDtypes) return MismatchKind::Dtype;
  if (usual.state != odd.state) return MismatchKind::State;
  return std::nullopt;
}

std::string lastEntered(const GroupEntries& group, size_t index, int64_t before) {
  const auto& mine = group.bySeq[index];
  auto it = mine.lower_bound(before);
  if (it == mine.begin()) return "it entered none in this group before it";
  --it;
  return "its last there was " + it->second->op + " #" + std::to_string(it->first);
}

CollectiveMismatch missingAt(const CollectiveLogs& logs, const GroupEntries& group, int64_t seq,
                             const std::vector<size_t>& present, const std::vector<size_t>& missing) {
  CollectiveMismatch m{group.name, seq, MismatchKind::MissingRank};
  for (size_t i : missing) m.ranks.push_back(logs.ranks[i].rank);
  for (size_t i : present) m.agreed.push_back(logs.ranks[i].rank);
  const LoggedCollective& entered = *group.bySeq[present.front()].at(seq);
  m.expected = trace::describeCollective(entered);
  m.explanation = ranksText(m.ranks) + " never entered " + entered.op + " #" + std::to_string(seq) + " of " +
                  trace::groupLabel(logs, group.name) + ", which " + ranksText(m.agreed) + " entered (" +
                  (missing.size() == 1 ? lastEntered(group, missing.front(), seq) : "their last entries are listed") +
                  "): the others wait in it. Look at what " + ranksText(m.ranks) +
                  " did instead: skipped the call, is stuck or slow before it, or died.";
  return m;
}

std::string oddText(MismatchKind kind, const LoggedCollective& c) {
  switch (kind) {
    case MismatchKind::OpType:
      return c.op;
    case MismatchKind::Size:
      return trace::shapesText(c.inputSizes) + " in, " + trace::shapesText(c.outputSizes) + " out";
    case MismatchKind::Dtype:
      return c.inputDtypes.empty() ? "no dtype" : c.inputDtypes.front();
    default:
      return "state " + c.state;
  }
}

const char* whatItMeans(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::OpType:
      return "the ranks call their collectives in another order";
    case MismatchKind::Size:
      return "the ranks pass tensors of other shapes (a backend may pair them anyway, or fail)";
    case MismatchKind::Dtype:
      return "the ranks pass tensors of other dtypes";
    default:
      return "some ranks saw it start or end and others did not";
  }
}

// The ranks at `seq`, all present: grouped by what they entered; the largest group is the usual one
// (ties: the lowest rank's), the rest are odd.
std::optional<CollectiveMismatch> unlikeAt(const CollectiveLogs& logs, const GroupEntries& group, int64_t seq,
                                           const std::vector<size_t>& present) {
  std::vector<std::vector<size_t>> alike;
  for (size_t i : present) {
    const LoggedCollective& mine = *group.bySeq[i].at(seq);
    auto same = std::find_if(alike.begin(), alike.end(), [&](const std::vector<size_t>& members) {
      return !differenceOf(*group.bySeq[members.front()].at(seq), mine);
    });
    if (same == alike.end())
      alike.push_back({i});
    else
      same->push_back(i);
  }
  if (alike.size() < 2) return std::nullopt;
  std::stable_sort(alike.begin(), alike.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  const LoggedCollective& expected = *group.bySeq[alike.front().front()].at(seq);
  const LoggedCollective& odd = *group.bySeq[alike[1].front()].at(seq);
  CollectiveMismatch m{group.name, seq, *differenceOf(expected, odd)};
  for (size_t i : alike.front()) m.agreed.push_back(logs.ranks[i].rank);
  for (size_t k = 1; k < alike.size(); ++k) {
    for (size_t i : alike[k]) m.ranks.push_back(logs.ranks[i].rank);
  }
  std::sort(m.ranks.begin(), m.ranks.end());
  m.expected = trace::describeCollective(expected);
  m.explanation = "at #" + std::to_string(seq) + " of " + trace::groupLabel(logs, group.name) + ", " +
                  ranksText(m.ranks) + " entered " + oddText(m.kind, odd) + " where " + ranksText(m.agreed) +
                  " entered " + oddText(m.kind, expected) + ": " + whatItMeans(m.kind) + ".";
  return m;
}

bool isPointToPoint(const LoggedCollective& c) { return c.op == "send" || c.op == "recv"; }

// How many sends of `label` the members other than `receiver` entered (into `others`: who they are).
int64_t sendsByOthers(const GroupEntries& group, size_t receiver, const std::string& label, std::vector<int>& others,
                      const CollectiveLogs& logs) {
  int64_t sends = 0;
  for (size_t j : group.members) {
    if (j == receiver) continue;
    others.push_back(logs.ranks[j].rank);
    for (const auto& entry : group.bySeq[j]) sends += entry.second->op == "send" && entry.second->label == label;
  }
  return sends;
}

// A group of sends and receives (a pipeline's): each rank numbers its own, so numbers do not pair
// them. A receive that never ended is paired by its label ("F mb0 stage0->1", the same on both
// sides, every step): the n-th receive of a label with the n-th send of it another member entered.
// The first receive without its send names who never sent it.
std::optional<CollectiveMismatch> unsentInGroup(const CollectiveLogs& logs, const GroupEntries& group) {
  for (size_t i : group.members) {
    std::map<std::string, int64_t> received;  // receives of each label so far
    for (const auto& [seq, entry] : group.bySeq[i]) {
      if (entry->op != "recv") continue;
      const int64_t n = ++received[entry->label];
      std::vector<int> others;
      if (entry->finished || sendsByOthers(group, i, entry->label, others, logs) >= n) continue;
      CollectiveMismatch m{group.name, seq, MismatchKind::MissingRank};
      m.ranks = others;
      m.agreed = {logs.ranks[i].rank};
      m.expected = trace::describeCollective(*entry);
      m.explanation =
          ranksText(m.agreed) + " waits in recv " + entry->label + " (#" + std::to_string(seq) + " of " +
          trace::groupLabel(logs, group.name) + "), which " +
          (others.size() == 1 ? ranksText(others) + " never sent" : "none of " + ranksText(others) + " sent") +
          ": the stage it waits for stopped. Look at what " + ranksText(others) +
          " did instead: is stuck or slow before it, or died.";
      return m;
    }
  }
  return std::nullopt;
}

std::optional<CollectiveMismatch> firstInGroup(const CollectiveLogs& logs, const GroupEntries& group) {
  for (size_t i : group.members) {
    for (const auto& entry : group.bySeq[i]) {
      if (isPointToPoint(*entry.second)) return unsentInGroup(logs, group);
    }
  }
  const auto [from, to] = comparableRange(group);
  for (int64_t seq = from; seq <= to && from != std::numeric_limits<int64_t>::min(); ++seq) {
    std::vector<size_t> present, missing;
    for (size_t i : group.members) (group.bySeq[i].count(seq) ? present : missing).push_back(i);
    if (present.empty()) continue;
    if (!missing.empty()) return missingAt(logs, group, seq, present, missing);
    if (auto m = unlikeAt(logs, group, seq, present)) return m;
  }
  return std::nullopt;
}

int64_t enteredAt(const CollectiveLogs& logs, const CollectiveMismatch& m) {
  for (const auto& rank : logs.ranks) {
    if (rank.rank != m.agreed.front()) continue;
    for (const auto& e : rank.entries) {
      if (e.group == m.group && e.seq == m.seq && e.createdNs > 0) return e.createdNs;
    }
  }
  return std::numeric_limits<int64_t>::max();
}

}  // namespace

const char* mismatchKindName(MismatchKind kind) {
  switch (kind) {
    case MismatchKind::MissingRank:
      return "missing_rank";
    case MismatchKind::OpType:
      return "op_type";
    case MismatchKind::Size:
      return "size";
    case MismatchKind::Dtype:
      return "dtype";
    case MismatchKind::State:
      return "state";
  }
  return "?";
}

std::optional<CollectiveMismatch> firstMismatch(const CollectiveLogs& logs) {
  std::optional<CollectiveMismatch> first;
  for (const auto& group : groupsOf(logs)) {
    auto m = firstInGroup(logs, group);
    if (m && (!first || enteredAt(logs, *m) < enteredAt(logs, *first))) first = std::move(m);
  }
  return first;
}

std::vector<AlignedCollectives> alignBySequence(const CollectiveLogs& logs, size_t lastRows) {
  std::vector<AlignedCollectives> out;
  for (const auto& group : groupsOf(logs)) {
    std::map<int64_t, AlignedCollectives> rows;
    for (size_t i = 0; i < logs.ranks.size(); ++i) {
      for (const auto& [seq, entry] : group.bySeq[i]) {
        auto& row = rows[seq];
        row.group = group.name;
        row.seq = seq;
        row.byRank.resize(logs.ranks.size());
        row.byRank[i] = entry;
      }
    }
    size_t skip = lastRows == 0 || rows.size() <= lastRows ? 0 : rows.size() - lastRows;
    for (auto& [seq, row] : rows) {
      if (skip > 0)
        --skip;
      else
        out.push_back(std::move(row));
    }
  }
  return out;
}

std::string whereRanksStand(const CollectiveLogs& logs) {
  std::string out;
  for (const auto& group : groupsOf(logs)) {
    int64_t lowest = std::numeric_limits<int64_t>::max(), highest = 0;
    size_t finished = 0, failed = 0;
    for (size_t i : group.members) {
      const int64_t last = group.bySeq[i].empty() ? 0 : group.bySeq[i].rbegin()->first;
      lowest = std::min(lowest, last);
      highest = std::max(highest, last);
      finished += !group.bySeq[i].empty() && group.bySeq[i].rbegin()->second->finished;
      failed += !group.bySeq[i].empty() && group.bySeq[i].rbegin()->second->failed;
    }
    if (group.members.empty() || highest == 0) continue;
    const LoggedCollective& last = *group.bySeq[group.members.front()].rbegin()->second;
    if (!out.empty()) out += " ";
    out += lowest == highest ? "In " + trace::groupLabel(logs, group.name) + " every rank entered " + last.op + " #" +
                                   std::to_string(highest) + " last, and " + std::to_string(finished) + " of " +
                                   std::to_string(group.members.size()) + " saw it end" +
                                   (failed > 0 ? ", " + std::to_string(failed) + " saw it fail." : ".")
                             : "In " + trace::groupLabel(logs, group.name) + " the ranks' last entries run from #" +
                                   std::to_string(lowest) + " to #" + std::to_string(highest) + ".";
  }
  return out.empty() ? "No rank recorded a collective." : out;
}

}  // namespace shardscope::stats
