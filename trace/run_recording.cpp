#include "trace/run_recording.h"

#include <algorithm>

#include "trace/ring_schedule.h"

namespace shardscope::trace {

RunRecording::RunRecording(int ranks) { reset(ranks); }

void RunRecording::reset(int ranks) {
  ranks_.assign(static_cast<size_t>(std::max(ranks, 0)), RankTimeline{});
  origin_ = INT64_MAX;
}

namespace {

// A unit index from a file may be anything: beyond this many blocks it is not a unit we draw.
constexpr int32_t kMaxUnitIndex = 1 << 16;

// Spans stay sorted by begin (viewers binary-search them) even when one arrives late: a collective
// that completed while the ranks waited at the step gate, after the merger was flushed.
// Into spans sorted by begin, and its begin at the same index of `begins`.
void insertByBegin(std::vector<Event>& spans, TimeIndex& begins, const Event& e) {
  if (spans.empty() || spans.back().beginNs <= e.beginNs) {
    spans.push_back(e);
    begins.push(e.beginNs);
    return;
  }
  const size_t at = begins.insert(e.beginNs);
  spans.insert(spans.begin() + static_cast<std::ptrdiff_t>(at), e);
}

void insertGroupByBegin(std::vector<Event>& groups, const Event& e) {
  const auto at = std::upper_bound(groups.begin(), groups.end(), e.beginNs,
                                   [](int64_t t, const Event& g) { return t < g.beginNs; });
  groups.insert(at, e);
}

void addUnitMemory(RankTimeline& r, const Event& e) {
  if (e.unit < -1 || e.unit > kMaxUnitIndex) return;
  const size_t slot = static_cast<size_t>(e.unit + 1);
  if (r.units.size() <= slot) r.units.resize(slot + 1);
  UnitMemoryTrack& track = r.units[slot];
  track.unit = e.unit;
  // Only tensor roles: a GPU allocation moves bytes from the allocator's cache lane, which is the
  // device's, not the unit's.
  if (e.fromRole != e.role && e.fromRole < kTensorRoleCount) track.current[e.fromRole] -= e.bytes;
  if (e.role < kTensorRoleCount) track.current[e.role] += e.bytes;
  for (int i = 0; i < kMemoryRoleCount; ++i) {
    track.current[i] = std::max<int64_t>(track.current[i], 0);
    track.peakByRole[i] = std::max(track.peakByRole[i], track.current[i]);
  }
  track.samples.push_back({e.beginNs, track.current});
}

}  // namespace

void RunRecording::add(const Event& e) {
  if (e.rank < 0 || e.rank >= ranks()) return;
  RankTimeline& r = ranks_[static_cast<size_t>(e.rank)];
  if (e.beginNs > 0) origin_ = std::min(origin_, e.beginNs);
  switch (e.kind) {
    case EventKind::Memory: {
      if (e.fromRole == e.role) {  // bytes assigned to a unit: the rank's totals do not change
        if (e.unit != kNoUnit) addUnitMemory(r, e);
        break;
      }
      if (e.fromRole != kNoRole && e.fromRole < kMemoryRoleCount) {
        r.current[e.fromRole] -= e.bytes;
        r.current[e.role] += e.bytes;
      } else {
        r.current[e.role] += e.bytes;
      }
      MemorySample s;
      s.tNs = e.beginNs;
      for (int i = 0; i < kMemoryRoleCount; ++i) {
        if (r.current[i] < 0) {
          r.negativeBalance += -r.current[i];
          r.current[i] = 0;
        }
        s.bytes[i] = r.current[i];
        if (i < kTensorRoleCount) s.total += r.current[i];
        s.device += r.current[i];
        r.peakByRole[i] = std::max(r.peakByRole[i], r.current[i]);
      }
      r.peakDevice = std::max(r.peakDevice, s.device);
      if (s.total > r.peakTotal) {
        r.peakTotal = s.total;
        r.atPeakTotal = s.bytes;
      }
      r.memory.push_back(s);
      r.memoryTimes.push(s.tNs);
      r.memoryTotals.push(s.total);
      if (e.unit != kNoUnit) addUnitMemory(r, e);
      break;
    }
    case EventKind::Group:
      if (e.endNs >= e.beginNs && e.op < kGroupKindCount) {  // not "waiting now"
        // In the order the rank entered them. A paused group is sent when its pause ends, as a
        // control event, and the recorder drains data first: the next group, unpaused, can arrive
        // before it.
        insertGroupByBegin(r.groups, e);
        if (e.endNs > e.beginNs) insertGroupByBegin(r.pauses, e);
      }
      break;
    case EventKind::Collective:
      insertByBegin(r.collectives, r.collectiveBegins, e);
      r.longestCollective = std::max(r.longestCollective, e.endNs - e.beginNs);
      break;
    case EventKind::Compute:
      insertByBegin(r.compute, r.computeBegins, e);
      r.longestCompute = std::max(r.longestCompute, e.endNs - e.beginNs);
      break;
    case EventKind::StepEnd: r.steps.push_back(e); break;
    case EventKind::Dropped:
    case EventKind::RunDone: r.dropped += e.count; break;
    default: break;
  }
}

size_t firstSpanFrom(const std::vector<Event>& spans, double tNs) {
  auto it = std::lower_bound(spans.begin(), spans.end(), tNs,
                             [](const Event& e, double t) { return static_cast<double>(e.beginNs) < t; });
  return static_cast<size_t>(it - spans.begin());
}

std::array<CollectiveTotals, kCollectiveOpCount> RunRecording::collectiveTotals(int rank,
                                                                               int steps) const {
  std::array<CollectiveTotals, kCollectiveOpCount> out{};
  for (const auto& c : this->rank(rank).collectives) {
    if (steps >= 0 && (c.step < 0 || c.step >= steps)) continue;
    auto& t = out[c.op];
    ++t.count;
    t.sizeBytes += collectiveSizeBytes(c);
    const auto traffic = ringTrafficPerRank(static_cast<CollectiveOp>(c.op), c.worldSize, collectiveSizeBytes(c));
    t.sentBytes += traffic.sentBytes;
    t.receivedBytes += traffic.receivedBytes;
    t.seconds += (c.endNs - c.beginNs) / 1e9;
  }
  return out;
}

CollectiveTotals allCollectives(const std::array<CollectiveTotals, kCollectiveOpCount>& perOp) {
  CollectiveTotals sum;
  for (const auto& t : perOp) {
    sum.count += t.count;
    sum.sizeBytes += t.sizeBytes;
    sum.sentBytes += t.sentBytes;
    sum.receivedBytes += t.receivedBytes;
    sum.seconds += t.seconds;
  }
  return sum;
}

namespace {
using Interval = std::pair<int64_t, int64_t>;

std::vector<Interval> unionOf(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t total = 0;
  for (const auto& i : v) total += i.second - i.first;
  return total;
}
}  // namespace

namespace {

// A rank's collectives and its forward and backward compute, each as a union of intervals.
std::pair<std::vector<Interval>, std::vector<Interval>> commAndCompute(const RankTimeline& t) {
  std::vector<Interval> comm, compute;
  for (const auto& c : t.collectives) comm.emplace_back(c.beginNs, c.endNs);
  for (const auto& c : t.compute) {
    const auto kind = static_cast<ComputeKind>(c.op);
    if (kind == ComputeKind::Forward || kind == ComputeKind::Backward) compute.emplace_back(c.beginNs, c.endNs);
  }
  return {unionOf(std::move(comm)), unionOf(std::move(compute))};
}

}  // namespace

double RunRecording::overlapPercent(int rank) const {
  const auto [commU, computeU] = commAndCompute(this->rank(rank));
  const int64_t commTime = length(commU);
  if (commTime == 0) return 0.0;
  int64_t both = 0;
  size_t j = 0;
  for (const auto& a : commU) {
    while (j < computeU.size() && computeU[j].second <= a.first) ++j;
    for (size_t k = j; k < computeU.size() && computeU[k].first < a.second; ++k) {
      both += std::min(a.second, computeU[k].second) - std::max(a.first, computeU[k].first);
    }
  }
  return 100.0 * static_cast<double>(both) / static_cast<double>(commTime);
}

std::vector<std::pair<int64_t, int64_t>> RunRecording::exposedComm(int rank) const {
  const auto [commU, computeU] = commAndCompute(this->rank(rank));
  std::vector<Interval> exposed;
  size_t j = 0;
  for (auto [begin, end] : commU) {
    while (j < computeU.size() && computeU[j].second <= begin) ++j;
    // Walk the compute intervals that cut into [begin, end), keeping the gaps between them.
    for (size_t k = j; k < computeU.size() && computeU[k].first < end; ++k) {
      if (computeU[k].first > begin) exposed.emplace_back(begin, computeU[k].first);
      begin = std::max(begin, computeU[k].second);
    }
    if (begin < end) exposed.emplace_back(begin, end);
  }
  return exposed;
}

const std::vector<std::pair<int64_t, int64_t>>& RunRecording::exposedCommCached(int rank) const {
  const auto& t = this->rank(rank);
  if (t.exposedCommFor[0] != t.collectives.size() || t.exposedCommFor[1] != t.compute.size()) {
    t.exposedComm = exposedComm(rank);
    t.exposedCommFor[0] = t.collectives.size();
    t.exposedCommFor[1] = t.compute.size();
  }
  return t.exposedComm;
}

std::vector<double> RunRecording::exposedCommSeconds(int rank) const {
  const auto exposed = exposedComm(rank);
  std::vector<double> out;
  size_t j = 0;
  for (const auto& step : this->rank(rank).steps) {
    int64_t ns = 0;
    while (j < exposed.size() && exposed[j].second <= step.beginNs) ++j;
    for (size_t k = j; k < exposed.size() && exposed[k].first < step.endNs; ++k) {
      ns += std::min(exposed[k].second, step.endNs) - std::max(exposed[k].first, step.beginNs);
    }
    out.push_back(static_cast<double>(ns) / 1e9);
  }
  return out;
}

std::vector<double> RunRecording::stepSeconds(int rank) const {
  std::vector<double> out;
  for (const auto& s : this->rank(rank).steps) out.push_back(activeStepNs(s) / 1e9);
  return out;
}

RoleBytes RunRecording::unitMemoryAt(int rank, int32_t unit, int64_t tNs) const {
  const auto& units = this->rank(rank).units;
  if (unit < -1 || static_cast<size_t>(unit + 1) >= units.size()) return {};
  const auto& samples = units[static_cast<size_t>(unit + 1)].samples;
  auto it = std::upper_bound(samples.begin(), samples.end(), tNs,
                             [](int64_t t, const UnitMemorySample& s) { return t < s.tNs; });
  if (it == samples.begin()) return {};
  return std::prev(it)->bytes;
}

std::vector<int32_t> RunRecording::recordedUnits() const {
  size_t slots = 0;
  for (const auto& r : ranks_) slots = std::max(slots, r.units.size());
  std::vector<int32_t> out;
  for (size_t slot = 0; slot < slots; ++slot) {
    for (const auto& r : ranks_) {
      if (slot < r.units.size() && r.units[slot].unit != kNoUnit) {
        out.push_back(static_cast<int32_t>(slot) - 1);
        break;
      }
    }
  }
  return out;
}

}  // namespace shardscope::trace
