#include "trace/issued_collectives.h"

#include <algorithm>
#include <map>
#include <utility>

#include "trace/run_recording.h"

namespace shardscope::trace {

namespace {

std::string membersText(const std::vector<int>& members) {
  std::string out = "[";
  for (size_t i = 0; i < members.size(); ++i) out += (i ? ", " : "") + std::to_string(members[i]);
  return out + "]";
}

LoggedCollective loggedOf(const Event& e, bool finished, bool failed, const std::string& group) {
  LoggedCollective c;
  c.group = group;
  c.seq = e.sequence;
  c.op = collectiveOpName(static_cast<CollectiveOp>(e.op));
  c.label = e.text.substr(0, e.text.find('|'));  // the unit, without an implementation's name
  c.inputSizes = {{e.bytes}};
  c.outputSizes = {{e.bytesOut}};
  c.inputDtypes = c.outputDtypes = {"bytes"};
  c.state = finished ? "completed" : "issued";
  c.finished = finished;
  c.failed = failed;
  c.createdNs = e.issueNs;
  return c;
}

}  // namespace

IssuedCollectives::IssuedCollectives(int worldSize, size_t keep)
    : worldSize_(worldSize), keep_(std::max<size_t>(keep, 1)), byRank_(static_cast<size_t>(std::max(worldSize, 0))) {}

void IssuedCollectives::add(const Event& event) {
  if (event.rank < 0 || event.rank >= worldSize_) return;
  auto& mine = byRank_[static_cast<size_t>(event.rank)];
  tensorRanks_ = tensorRanksOf(event, tensorRanks_);
  pipeRanks_ = pipeRanksOf(event, pipeRanks_);
  if (event.kind == EventKind::CollectiveIssued) {
    mine.push_back({event, false, false});
    if (mine.size() > keep_) mine.pop_front();
  } else if (event.kind == EventKind::Collective || event.kind == EventKind::CollectiveFailed) {
    // Usually the oldest unfinished: collectives mostly end in the order they were issued.
    for (auto& issued : mine) {
      if (!issued.finished && !issued.failed && issued.event.issueNs == event.issueNs) {
        (event.kind == EventKind::Collective ? issued.finished : issued.failed) = true;
        break;
      }
    }
  }
}

bool IssuedCollectives::empty() const {
  return std::all_of(byRank_.begin(), byRank_.end(), [](const std::deque<Issued>& d) { return d.empty(); });
}

CollectiveLogs IssuedCollectives::logs() const {
  CollectiveLogs out;
  out.source = "the ranks' issued collectives (the last " + std::to_string(keep_) + " per rank)";
  out.worldSize = worldSize_;
  for (int r = 0; r < worldSize_; ++r) {
    RankCollectiveLog log{r, "", {}};
    for (const auto& issued : byRank_[static_cast<size_t>(r)]) {
      const auto group = static_cast<ProcessGroup>(issued.event.processGroup);
      const auto members = processGroupMembers(group, r, issued.event.worldSize, worldSize_, tensorRanks_, pipeRanks_);
      const std::string name = std::string(processGroupName(group)) + " " + membersText(members);
      out.groupRanks[name] = members;
      log.entries.push_back(loggedOf(issued.event, issued.finished, issued.failed, name));
    }
    out.ranks.push_back(std::move(log));
  }
  return out;
}

namespace {

// A rank's collectives, ended and failed, in the order it issued them.
std::vector<Event> collectivesByIssue(const RankTimeline& rank, int r) {
  std::vector<Event> out;
  for (const auto& span : rank.collectives) out.push_back(span.toEvent(r));
  out.insert(out.end(), rank.failedCollectives.begin(), rank.failedCollectives.end());
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) { return a.issueNs < b.issueNs; });
  return out;
}

}  // namespace

CollectiveLogs lastCollectivesOf(const RunRecording& recording, size_t keep) {
  bool failed = false, whole = true;
  for (int r = 0; r < recording.ranks(); ++r) {
    failed |= !recording.rank(r).failedCollectives.empty();
    whole &= recording.rank(r).folded.steps == 0;
  }
  if (!failed || !whole) return {};
  IssuedCollectives issued(recording.ranks(), keep);
  for (int r = 0; r < recording.ranks(); ++r) {
    std::map<std::pair<uint8_t, int32_t>, int64_t> numbered;  // per group (kind, size): issued so far
    for (Event e : collectivesByIssue(recording.rank(r), r)) {
      Event asIssued = e;
      asIssued.kind = EventKind::CollectiveIssued;
      asIssued.beginNs = e.issueNs;
      asIssued.endNs = 0;
      asIssued.sequence = ++numbered[{e.processGroup, e.worldSize}];
      issued.add(asIssued);
      issued.add(e);
    }
  }
  CollectiveLogs logs = issued.logs();
  logs.source = "the ranks' collectives in the trace (the last " + std::to_string(keep) + " per rank)";
  return logs;
}

}  // namespace shardscope::trace
