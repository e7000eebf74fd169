#include "trace/run_recording.h"

#include <algorithm>
#include <cstdio>

#include "trace/format.h"
#include "trace/ring_schedule.h"

namespace shardscope::trace {

RunRecording::RunRecording(int ranks) { reset(ranks); }

void RunRecording::reset(int ranks) {
  ranks_.assign(static_cast<size_t>(std::max(ranks, 0)), RankTimeline{});
  origin_ = INT64_MAX;
  foldThroughStep_ = -1;
  worldCollectivesMixed_ = false;
}

void RunRecording::ensureRanks(int ranks) {
  if (ranks > this->ranks()) ranks_.resize(static_cast<size_t>(ranks));
}

namespace {

// A unit index from a file may be anything: beyond this many blocks it is not a unit we draw.
constexpr int32_t kMaxUnitIndex = 1 << 16;

// Spans stay sorted by begin (viewers binary-search them) even when one arrives late: a collective
// that completed while the ranks waited at the step gate, after the merger was flushed.
// Into spans sorted by begin, and its begin at the same index of `begins`.
template <class Span>
void insertByBegin(std::vector<Span>& spans, TimeIndex& begins, const Span& e) {
  if (spans.empty() || spans.back().beginNs <= e.beginNs) {
    spans.push_back(e);
    begins.push(e.beginNs);
    return;
  }
  const size_t at = begins.insert(e.beginNs);
  spans.insert(spans.begin() + static_cast<std::ptrdiff_t>(at), e);
}

void insertGroupByBegin(std::vector<GroupSpan>& groups, const GroupSpan& e) {
  const auto at = std::upper_bound(groups.begin(), groups.end(), e.beginNs,
                                   [](int64_t t, const GroupSpan& g) { return t < g.beginNs; });
  groups.insert(at, e);
}

void addUnitMemory(std::vector<UnitMemoryTrack>& units, const Event& e) {
  if (e.unit < -1 || e.unit > kMaxUnitIndex) return;
  const size_t slot = static_cast<size_t>(e.unit + 1);
  if (units.size() <= slot) units.resize(slot + 1);
  UnitMemoryTrack& track = units[slot];
  track.unit = e.unit;
  // Only tensor roles: a GPU allocation moves bytes from the allocator's cache lane, which is the
  // device's, not the unit's.
  RoleBytes current = track.samples.last();
  if (e.fromRole != e.role && e.fromRole < kTensorRoleCount) current[e.fromRole] -= e.bytes;
  if (e.role < kTensorRoleCount) current[e.role] += e.bytes;
  for (int i = 0; i < kMemoryRoleCount; ++i) {
    current[i] = std::max<int64_t>(current[i], 0);
    track.peakByRole[i] = std::max(track.peakByRole[i], current[i]);
  }
  track.samples.push(e.beginNs, current);
}

// One memory space's balance as events change it (the device's in RankTimeline, the host's in
// HostMemory): bytes per role now, each role's peak, the tensor total's peak and the split at it,
// and the samples the views draw.
struct MemoryBalance {
  RoleBytes& current;
  RoleBytes& peakByRole;
  int64_t& peakTotal;
  RoleBytes& atPeakTotal;
  RoleTrack& samples;
  RangeMax& totals;
};

// The memory arithmetic, once for both spaces: a Memory event's bytes moved between roles or added
// to one, over the first `roles` roles the space keeps (every one on the device, the tensor roles on
// the host). A role driven below zero by a free of bytes never seen allocated stays at zero, and
// the bytes go to `negativeBalance`. Returns the sum over those roles (tensors and device lanes).
int64_t applyMemoryEvent(const MemoryBalance& m, const Event& e, int roles, int64_t& negativeBalance) {
  if (e.fromRole != kNoRole && e.fromRole < roles) m.current[e.fromRole] -= e.bytes;
  m.current[e.role] += e.bytes;
  int64_t tensors = 0, all = 0;
  for (int i = 0; i < roles; ++i) {
    if (m.current[i] < 0) {
      negativeBalance += -m.current[i];
      m.current[i] = 0;
    }
    if (i < kTensorRoleCount) tensors += m.current[i];
    all += m.current[i];
    m.peakByRole[i] = std::max(m.peakByRole[i], m.current[i]);
  }
  if (tensors > m.peakTotal) {
    m.peakTotal = tensors;
    m.atPeakTotal = m.current;
  }
  m.samples.push(e.beginNs, m.current);
  m.totals.push(tensors);
  return all;
}

// A Memory event on the device, or in host memory (its own lane, tensor roles only).
void addMemory(RankTimeline& r, const Event& e) {
  const bool host = e.space == static_cast<uint8_t>(MemorySpace::Host);
  if (host && e.role >= kTensorRoleCount) return;
  if (e.unit != kNoUnit) addUnitMemory(host ? r.host.units : r.units, e);
  if (e.fromRole == e.role) return;  // bytes assigned to a unit: the totals do not change
  if (host) {
    const MemoryBalance balance{r.host.current,     r.host.peakByRole, r.host.peakTotal,
                                r.host.atPeakTotal, r.host.memory,     r.host.totals};
    applyMemoryEvent(balance, e, kTensorRoleCount, r.negativeBalance);
    return;
  }
  const MemoryBalance balance{r.current, r.peakByRole, r.peakTotal, r.atPeakTotal, r.memory, r.memoryTotals};
  r.peakDevice = std::max(r.peakDevice, applyMemoryEvent(balance, e, kMemoryRoleCount, r.negativeBalance));
}

}  // namespace

void RunRecording::add(const Event& e) {
  if (e.rank < 0 || e.rank >= ranks()) return;
  RankTimeline& r = ranks_[static_cast<size_t>(e.rank)];
  if (e.beginNs > 0) origin_ = std::min(origin_, e.beginNs);
  switch (e.kind) {
    case EventKind::Memory:
      addMemory(r, e);
      break;
    case EventKind::Group:
      if (e.endNs >= e.beginNs && e.op < kGroupKindCount) {  // not "waiting now"
        // In the order the rank entered them. A paused group is sent when its pause ends, as a
        // control event, and the recorder drains data first: the next group, unpaused, can arrive
        // before it.
        const auto group = GroupSpan::of(e, &r.names);
        insertGroupByBegin(r.groups, group);
        if (e.endNs > e.beginNs) insertGroupByBegin(r.pauses, group);
      }
      break;
    case EventKind::Collective:
      tensorRanks_ = tensorRanksOf(e, tensorRanks_);
      pipeRanks_ = pipeRanksOf(e, pipeRanks_);
      insertByBegin(r.collectives, r.collectiveBegins, CollectiveSpan::of(e, &r.names));
      r.longestCollective = std::max(r.longestCollective, e.endNs - e.beginNs);
      break;
    case EventKind::CollectiveFailed: {
      const auto later = std::upper_bound(r.failedCollectives.begin(), r.failedCollectives.end(), e.beginNs,
                                          [](int64_t t, const Event& f) { return t < f.beginNs; });
      r.failedCollectives.insert(later, e);
      break;
    }
    case EventKind::Compute:
      insertByBegin(r.compute, r.computeBegins, ComputeSpan::of(e, &r.names));
      r.longestCompute = std::max(r.longestCompute, e.endNs - e.beginNs);
      r.offloadSpans |= isOffloadSpan(e);
      break;
    case EventKind::StepEnd:
      r.steps.push_back(e);
      if (keepSteps_ > 0 && r.steps.size() >= 2 * static_cast<size_t>(keepSteps_)) {
        foldOlderSteps(e.rank, r.steps.size() - static_cast<size_t>(keepSteps_));
      } else if (maxDetailEvents_ > 0) {
        // A live rank's step end follows its step's events; a trace's reader adds it where the
        // step began (older steps are then complete, their events read before).
        foldWithinBudget(e.rank, detailOverRanks_ > 0 ? e.beginNs : e.endNs);
      }
      break;
    case EventKind::Dropped:
    case EventKind::RunDone:
      r.dropped += e.droppedEvents;
      break;
    default:
      break;
  }
  if (detailOverRanks_ > 0 && e.kind != EventKind::StepEnd && ++eventsSinceBudgetCheck_ >= kBudgetCheckEvery) {
    eventsSinceBudgetCheck_ = 0;
    foldWithinBudget(e.rank, e.beginNs);  // a trace is read in time order: steps ended by now are whole
  }
}

namespace {

// Folded steps were completed, so they count whenever `steps` does not stop before them.
bool countsFolded(const FoldedSteps& folded, int steps) { return steps < 0 || steps >= folded.steps; }

template <class Span>
bool inSteps(const Span& collectiveOrSpan, int steps) {
  return steps < 0 || (collectiveOrSpan.step >= 0 && collectiveOrSpan.step < steps);
}

void addCollective(std::array<CollectiveTotals, kCollectiveOpCount>& totals, const CollectiveSpan& c) {
  auto& t = totals[c.op];
  ++t.count;
  t.unsized += c.sizeUnknown ? 1 : 0;
  t.sizeBytes += collectiveSizeBytes(c);
  const auto traffic = collectiveTraffic(c);
  t.sentBytes += traffic.sentBytes;
  t.receivedBytes += traffic.receivedBytes;
  t.seconds += (c.endNs - c.beginNs) / 1e9;
}

std::array<CollectiveTotals, kCollectiveOpCount> sumOf(std::array<CollectiveTotals, kCollectiveOpCount> a,
                                                       const std::array<CollectiveTotals, kCollectiveOpCount>& b) {
  for (int op = 0; op < kCollectiveOpCount; ++op) addTotals(a[op], b[op]);
  return a;
}

void addSentByGroup(std::array<int64_t, kProcessGroupCount>& sent, const CollectiveSpan& c) {
  if (c.processGroup >= kProcessGroupCount) return;
  sent[c.processGroup] += collectiveTraffic(c).sentBytes;
}

}  // namespace

std::array<CollectiveTotals, kCollectiveOpCount> RunRecording::collectiveTotals(int rank, int steps) const {
  const auto& t = this->rank(rank);
  std::array<CollectiveTotals, kCollectiveOpCount> out{};
  if (countsFolded(t.folded, steps)) out = t.folded.collectives;
  if (steps < 0) out = sumOf(out, t.folded.outsideSteps);
  for (const auto& c : t.collectives) {
    if (inSteps(c, steps)) addCollective(out, c);
  }
  return out;
}

std::array<int64_t, kProcessGroupCount> RunRecording::sentBytesByGroup(int rank, int steps) const {
  const auto& t = this->rank(rank);
  std::array<int64_t, kProcessGroupCount> out{};
  if (countsFolded(t.folded, steps)) out = t.folded.sentBytesByGroup;
  for (const auto& c : t.collectives) {
    if (inSteps(c, steps)) addSentByGroup(out, c);
  }
  return out;
}

int64_t RunRecording::recomputeNs(int rank, int steps) const {
  const auto& t = this->rank(rank);
  int64_t ns = countsFolded(t.folded, steps) ? t.folded.recomputeNs : 0;
  for (const auto& span : t.compute) {
    if (span.step >= 0 && inSteps(span, steps) && isRecomputation(span)) ns += span.endNs - span.beginNs;
  }
  return ns;
}

int64_t RunRecording::activationSavedBytes(int rank) const {
  const auto& t = this->rank(rank);
  return std::max(t.folded.activationSavedBytes, activationSavedForBackward(t));
}

int64_t activationSavedForBackward(const RankTimeline& t) {
  int64_t saved = 0;
  bool inForward = false;
  for (const auto& span : t.compute) {
    const auto phase = static_cast<Phase>(span.phase);
    const auto kind = static_cast<ComputeKind>(span.op);
    if (kind == ComputeKind::Forward && phase == Phase::Forward) inForward = true;
    if (kind != ComputeKind::Backward || !inForward) continue;
    inForward = false;
    // The last sample at or before backward's first span: what forward left behind.
    saved =
        std::max(saved, t.memory.bytesAt(static_cast<double>(span.beginNs))[static_cast<int>(MemoryRole::Activation)]);
  }
  return saved;
}

void addTotals(CollectiveTotals& into, const CollectiveTotals& t) {
  into.count += t.count;
  into.unsized += t.unsized;
  into.sizeBytes += t.sizeBytes;
  into.sentBytes += t.sentBytes;
  into.receivedBytes += t.receivedBytes;
  into.seconds += t.seconds;
}

std::string formatCollectiveBytes(const CollectiveTotals& t, int64_t bytes, double steps) {
  if (t.count > 0 && t.unsized == t.count) return "size not recorded";
  const std::string figure = formatBytes(static_cast<double>(bytes) / std::max(steps, 1.0));
  return t.unsized > 0 ? figure + " (+" + std::to_string(t.unsized) + " unsized)" : figure;
}

CollectiveTotals allCollectives(const std::array<CollectiveTotals, kCollectiveOpCount>& perOp) {
  CollectiveTotals sum;
  for (const auto& t : perOp) addTotals(sum, t);
  return sum;
}

namespace {
using Interval = std::pair<int64_t, int64_t>;

// The union of the `spans` that `keep` accepts, as sorted disjoint intervals. `spans` are in order
// of begin, as a timeline holds them (insertByBegin): all a union needs.
template <class Spans, class Keep>
std::vector<Interval> unionOf(const Spans& spans, Keep keep) {
  std::vector<Interval> out;
  for (const auto& s : spans) {
    if (s.endNs <= s.beginNs || !keep(s)) continue;
    if (!out.empty() && s.beginNs <= out.back().second) {
      out.back().second = std::max(out.back().second, s.endNs);
    } else {
      out.emplace_back(s.beginNs, s.endNs);
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
  const auto everyOne = [](const CollectiveSpan&) { return true; };
  return {unionOf(t.collectives, everyOne), computeIntervals(t)};
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> computeIntervals(const RankTimeline& detail) {
  const auto forwardOrBackward = [](const ComputeSpan& c) {
    const auto kind = static_cast<ComputeKind>(c.op);
    return kind == ComputeKind::Forward || kind == ComputeKind::Backward;
  };
  return unionOf(detail.compute, forwardOrBackward);
}

CommExposure commExposureOf(const RankTimeline& detail) {
  const auto [commU, computeU] = commAndCompute(detail);
  CommExposure out;
  out.commNs = length(commU);
  size_t j = 0;
  for (auto [begin, end] : commU) {
    while (j < computeU.size() && computeU[j].second <= begin) ++j;
    // Walk the compute intervals that cut into [begin, end), keeping the gaps between them.
    for (size_t k = j; k < computeU.size() && computeU[k].first < end; ++k) {
      if (computeU[k].first > begin) out.exposed.emplace_back(begin, computeU[k].first);
      begin = std::max(begin, computeU[k].second);
    }
    if (begin < end) out.exposed.emplace_back(begin, end);
  }
  out.hiddenNs = out.commNs - length(out.exposed);
  return out;
}

RunRecording::CommFigures RunRecording::commFigures(int rank) const {
  const auto& t = this->rank(rank);
  const auto exposure = commExposureOf(t);
  CommFigures out;
  const int64_t commTime = exposure.commNs + t.folded.commNs;
  if (commTime > 0) {
    out.overlapPercent =
        100.0 * static_cast<double>(exposure.hiddenNs + t.folded.hiddenCommNs) / static_cast<double>(commTime);
  }
  out.exposedCommSeconds = t.folded.exposedCommSeconds;
  const auto live = secondsPerStep(t, exposure.exposed);
  out.exposedCommSeconds.insert(out.exposedCommSeconds.end(), live.begin(), live.end());
  return out;
}

const std::vector<std::pair<int64_t, int64_t>>& RunRecording::exposedCommCached(int rank) const {
  const auto& t = this->rank(rank);
  if (t.exposedCommFor[0] != t.collectives.size() || t.exposedCommFor[1] != t.compute.size()) {
    t.exposedComm = commExposureOf(t).exposed;
    t.exposedCommFor[0] = t.collectives.size();
    t.exposedCommFor[1] = t.compute.size();
  }
  return t.exposedComm;
}

std::vector<int64_t> coveredNs(const std::vector<std::pair<int64_t, int64_t>>& windows,
                               const std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::vector<int64_t> out;
  size_t j = 0;
  for (const auto& [begin, end] : windows) {
    int64_t ns = 0;
    while (j < intervals.size() && intervals[j].second <= begin) ++j;
    for (size_t k = j; k < intervals.size() && intervals[k].first < end; ++k) {
      ns += std::min(intervals[k].second, end) - std::max(intervals[k].first, begin);
    }
    out.push_back(ns);
  }
  return out;
}

std::vector<double> secondsPerStep(const RankTimeline& detail,
                                   const std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const auto& step : detail.steps) steps.emplace_back(step.beginNs, step.endNs);
  std::vector<double> out;
  for (int64_t ns : coveredNs(steps, intervals)) out.push_back(static_cast<double>(ns) / 1e9);
  return out;
}

std::vector<double> RunRecording::stepSeconds(int rank) const {
  std::vector<double> out = this->rank(rank).folded.stepSeconds;
  for (const auto& s : this->rank(rank).steps) out.push_back(activeStepNs(s) / 1e9);
  return out;
}

RoleBytes RunRecording::unitMemoryAt(int rank, int32_t unit, int64_t tNs, MemorySpace space) const {
  const auto& units = space == MemorySpace::Host ? this->rank(rank).host.units : this->rank(rank).units;
  if (unit < -1 || static_cast<size_t>(unit + 1) >= units.size()) return {};
  return units[static_cast<size_t>(unit + 1)].samples.bytesAt(static_cast<double>(tNs));
}

std::vector<int32_t> RunRecording::recordedUnits() const {
  size_t slots = 0;
  for (const auto& r : ranks_) slots = std::max({slots, r.units.size(), r.host.units.size()});
  auto recorded = [](const std::vector<UnitMemoryTrack>& units, size_t slot) {
    return slot < units.size() && units[slot].unit != kNoUnit;
  };
  std::vector<int32_t> out;
  for (size_t slot = 0; slot < slots; ++slot) {
    for (const auto& r : ranks_) {
      if (recorded(r.units, slot) || recorded(r.host.units, slot)) {
        out.push_back(static_cast<int32_t>(slot) - 1);
        break;
      }
    }
  }
  return out;
}

void RunRecording::keepLastSteps(int steps, Spill spill) {
  keepSteps_ = std::max(steps, 0);
  maxDetailEvents_ = 0;
  detailOverRanks_ = 0;
  spill_ = std::move(spill);
}

void RunRecording::keepDetailWithin(size_t events, Spill spill) {
  keepSteps_ = 0;
  maxDetailEvents_ = events;
  detailOverRanks_ = 0;
  foldThroughStep_ = -1;
  spill_ = std::move(spill);
}

void RunRecording::keepDetailWithinOverRanks(size_t events, Spill spill) {
  keepDetailWithin(events, std::move(spill));
  detailOverRanks_ = events;
}

// Every rank folds through the same step, so the views' k-th event group stays the same moment
// on every rank: the first rank over the budget sets it, each folds there at its own next step end.
// A sixteenth of the steps held at a time: a fold runs under the window's lock on the thread that
// drains the ranks' pipes. Folding half at once pauses it a quarter of a second and more at the
// budget (build/bench/fold_pause_bench), long enough for the ranks' event queues to overflow.
void RunRecording::foldWithinBudget(int rank, int64_t completeByNs) {
  if (detailOverRanks_ > 0) maxDetailEvents_ = std::max<size_t>(1, detailOverRanks_ / ranks_.size());
  const auto& steps = ranks_[static_cast<size_t>(rank)].steps;
  if (steps.size() >= 2 && detailEvents(rank) > maxDetailEvents_) {
    const size_t fold = std::max<size_t>(1, steps.size() / kFoldShare);
    foldThroughStep_ = std::max(foldThroughStep_, steps[fold - 1].step);
  }
  size_t through = 0;
  while (through < steps.size() && steps[through].step <= foldThroughStep_ && steps[through].endNs <= completeByNs) {
    ++through;
  }
  if (through > 0 && through < steps.size()) foldOlderSteps(rank, through);
}

size_t RunRecording::detailEvents(int rank) const {
  const auto& t = this->rank(rank);
  size_t events = t.memory.size() + t.host.memory.size() + t.compute.size() + t.collectives.size() + t.groups.size();
  for (const auto& u : t.units) events += u.samples.size();
  for (const auto& u : t.host.units) events += u.samples.size();
  return events;
}

namespace {

template <class T>
size_t heldBytes(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

size_t unitBytes(const std::vector<UnitMemoryTrack>& units) {
  size_t bytes = heldBytes(units);
  for (const auto& u : units) bytes += u.samples.heldBytes();
  return bytes;
}

}  // namespace

size_t RunRecording::detailBytes(int rank) const {
  const auto& t = this->rank(rank);
  return t.memory.heldBytes() + t.memoryTotals.heldBytes() + heldBytes(t.collectives) + heldBytes(t.compute) +
         t.collectiveBegins.heldBytes() + t.computeBegins.heldBytes() + heldBytes(t.steps) + heldBytes(t.groups) +
         heldBytes(t.pauses) + unitBytes(t.units) + t.host.memory.heldBytes() + t.host.totals.heldBytes() +
         unitBytes(t.host.units);
}

namespace {

// Moves the leading elements of `from` for which `older` holds into `to`.
template <class T, class Older>
void movePrefix(std::vector<T>& from, std::vector<T>& to, Older older) {
  const auto end = std::find_if_not(from.begin(), from.end(), older);
  to.assign(std::make_move_iterator(from.begin()), std::make_move_iterator(end));
  from.erase(from.begin(), end);
}

void foldFigures(FoldedSteps& f, const RankTimeline& older) {
  f.steps += static_cast<int>(older.steps.size());
  f.groups += older.groups.size();
  for (const auto& s : older.steps) {
    f.losses.push_back(s.loss);
    f.stepSeconds.push_back(activeStepNs(s) / 1e9);
  }
  const auto exposure = commExposureOf(older);
  const auto exposed = secondsPerStep(older, exposure.exposed);
  f.exposedCommSeconds.insert(f.exposedCommSeconds.end(), exposed.begin(), exposed.end());
  for (const auto& c : older.collectives) {
    // One before the first step (the initial broadcast) is in no step's figures, only the run's.
    if (c.step < 0) {
      addCollective(f.outsideSteps, c);
      continue;
    }
    addCollective(f.collectives, c);
    addSentByGroup(f.sentBytesByGroup, c);
  }
  f.commNs += exposure.commNs;
  f.hiddenCommNs += exposure.hiddenNs;
  for (const auto& span : older.compute) {
    if (span.step >= 0 && isRecomputation(span)) f.recomputeNs += span.endNs - span.beginNs;
  }
  f.activationSavedBytes = std::max(f.activationSavedBytes, activationSavedForBackward(older));
}

// The memory totals of samples [0, end) of `from`.
RangeMax frontTotals(const RangeMax& from, size_t end) {
  RangeMax out;
  for (size_t i = 0; i < end; ++i) out.push(from.value(i));
  return out;
}

// Each unit's samples up to `cut` move from `kept` to `older` (same slots, same peaks).
void foldUnitTracks(std::vector<UnitMemoryTrack>& kept, std::vector<UnitMemoryTrack>& older, int64_t cut) {
  older.resize(kept.size());
  for (size_t u = 0; u < kept.size(); ++u) {
    older[u].unit = kept[u].unit;
    older[u].peakByRole = kept[u].peakByRole;
    auto& samples = kept[u].samples;
    older[u].samples = samples.takeFront(samples.countAtOrBefore(static_cast<double>(cut)));
  }
}

// The indexes views search are over the detail kept: the folded spans' begins leave them.
void reindex(RankTimeline& t, const RankTimeline& older) {
  t.collectiveBegins.dropFront(older.collectives.size());
  t.computeBegins.dropFront(older.compute.size());
  t.exposedCommFor[0] = t.exposedCommFor[1] = SIZE_MAX;
}

}  // namespace

void RunRecording::foldOlderSteps(int rank, size_t fold) {
  RankTimeline& t = ranks_[static_cast<size_t>(rank)];
  const int64_t cut = t.steps[fold - 1].endNs;
  const int32_t lastStep = t.steps[fold - 1].step;
  RankTimeline older;
  older.steps.assign(t.steps.begin(), t.steps.begin() + static_cast<std::ptrdiff_t>(fold));
  t.steps.erase(t.steps.begin(), t.steps.begin() + static_cast<std::ptrdiff_t>(fold));
  const size_t olderSamples = t.memory.countAtOrBefore(static_cast<double>(cut));
  older.memory = t.memory.takeFront(olderSamples);
  older.memoryTotals = frontTotals(t.memoryTotals, olderSamples);
  t.memoryTotals.dropFront(olderSamples);
  const size_t olderHostSamples = t.host.memory.countAtOrBefore(static_cast<double>(cut));
  older.host.memory = t.host.memory.takeFront(olderHostSamples);
  older.host.totals = frontTotals(t.host.totals, olderHostSamples);
  t.host.totals.dropFront(olderHostSamples);
  // A span of a folded step goes with it; one of no step (before the first) by its end.
  const auto inOlderStep = [&](const auto& e) { return e.step >= 0 ? e.step <= lastStep : e.endNs <= cut; };
  movePrefix(t.collectives, older.collectives, inOlderStep);
  movePrefix(t.compute, older.compute, inOlderStep);
  movePrefix(t.groups, older.groups, [&](const GroupSpan& g) { return g.beginNs <= cut; });
  movePrefix(t.pauses, older.pauses, [&](const GroupSpan& g) { return g.beginNs <= cut; });
  foldUnitTracks(t.units, older.units, cut);
  foldUnitTracks(t.host.units, older.host.units, cut);
  foldFigures(t.folded, older);
  reindex(t, older);
  older.names = t.names;  // a writer thread may write the older spans after this recording is gone
  if (spill_) spill_(rank, std::move(older));
}

std::map<int, const Event*> stepEndsByStep(const RankTimeline& detail) {
  std::map<int, const Event*> out;
  for (const auto& s : detail.steps) out[s.step] = &s;
  return out;
}

int firstRecordedRank(const RunRecording& recording) {
  for (int r = 0; r < recording.ranks(); ++r) {
    if (!recording.rank(r).steps.empty()) return r;
  }
  return 0;
}

int64_t droppedEvents(const RunRecording& recording) {
  int64_t dropped = 0;
  for (int r = 0; r < recording.ranks(); ++r) dropped += recording.rank(r).dropped;
  return dropped;
}

std::string droppedEventsText(const RunRecording& recording) {
  const int64_t total = droppedEvents(recording);
  if (total == 0) return "";
  std::string perRank;
  for (int r = 0; r < recording.ranks(); ++r) {
    if (recording.rank(r).dropped == 0) continue;
    perRank += (perRank.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
               std::to_string(recording.rank(r).dropped);
  }
  return std::to_string(total) + " events were dropped (" + perRank + ")";
}

std::string failedCollectivesText(const RunRecording& recording) {
  std::string out;
  for (int r = 0; r < recording.ranks(); ++r) {
    for (const Event& e : recording.rank(r).failedCollectives) {
      char inFlight[32];
      std::snprintf(inFlight, sizeof inFlight, "%.2f s", static_cast<double>(e.beginNs - e.issueNs) / 1e9);
      out += "rank " + std::to_string(r) + ": " + collectiveSpanName(e) +
             (e.step >= 0 ? " in step " + std::to_string(e.step + 1) : "") + " failed after " + inFlight +
             " in flight (its timeout passed or a peer went away): it never ended\n";
    }
  }
  return out;
}

}  // namespace shardscope::trace
