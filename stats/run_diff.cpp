#include "stats/run_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "config/strategies.h"
#include "trace/format.h"
#include "trace/ring_schedule.h"

namespace shardscope::stats {

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::Regression:
      return "regression";
    case Verdict::Improvement:
      return "improvement";
    case Verdict::NoChange:
      break;
  }
  return "no change";
}

std::string diffValueText(DiffUnit unit, double v) {
  switch (unit) {
    case DiffUnit::Bytes:
      return trace::formatBytes(v);
    case DiffUnit::Percent:
      return trace::formatPercent(v);
    case DiffUnit::Seconds:
      break;
  }
  return trace::formatDuration(v * 1e9);
}

std::string diffChangeText(const DiffChange& c) {
  const double delta = c.b - c.a;
  std::string text = (delta >= 0 ? "+" : "-") + diffValueText(c.unit, std::fabs(delta));
  if (c.unit == DiffUnit::Percent) {
    char points[32];
    std::snprintf(points, sizeof points, "%+.1f points", delta);
    text = points;
  }
  return text;
}

namespace {

// Per step, the slowest rank's time: the step as the job saw it.
std::vector<double> slowestRankSteps(const DiffSide& s) {
  size_t steps = s.ranks.empty() ? 0 : std::numeric_limits<size_t>::max();
  for (const auto& r : s.ranks) steps = std::min(steps, r.stepSeconds.size());
  std::vector<double> out(steps, 0.0);
  for (const auto& r : s.ranks) {
    for (size_t i = 0; i < steps; ++i) out[i] = std::max(out[i], r.stepSeconds[i]);
  }
  return out;
}

void meanAndSpread(const std::vector<double>& v, double& mean, double& spread) {
  mean = spread = 0;
  if (v.empty()) return;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  if (v.size() < 2) return;
  for (double x : v) spread += (x - mean) * (x - mean);
  spread = std::sqrt(spread / static_cast<double>(v.size() - 1));
}

// The standard error of the steps' mean. Steps in a run are not independent: a machine busy for a
// while (another job, a neighbour's build) slows several in a row, and then spread / sqrt(n)
// understates it. So it is also taken from the means of kBatches runs of consecutive steps (the
// batch-means method of simulation output analysis), and the larger of the two is kept.
double standardError(const std::vector<double>& v) {
  constexpr size_t kBatches = 5;
  double mean = 0, spread = 0;
  meanAndSpread(v, mean, spread);
  const double plain = v.empty() ? 0 : spread / std::sqrt(static_cast<double>(v.size()));
  const size_t perBatch = v.size() / kBatches;
  if (perBatch < 2) return plain;  // batches of one step: the plain figure again
  std::vector<double> batchMeans;
  for (size_t b = 0; b < kBatches; ++b) {
    double sum = 0;
    for (size_t i = b * perBatch; i < (b + 1) * perBatch; ++i) sum += v[i];
    batchMeans.push_back(sum / static_cast<double>(perBatch));
  }
  double batchMean = 0, batchSpread = 0;
  meanAndSpread(batchMeans, batchMean, batchSpread);
  return std::max(plain, batchSpread / std::sqrt(static_cast<double>(kBatches)));
}

std::string placeOf(uint8_t phase, const std::string& unit) {
  const std::string p = trace::phaseName(static_cast<trace::Phase>(phase));
  return unit.empty() ? p : p + " of " + unit;
}

// Where a rank's memory peaked: the collective in flight then, else the forward or backward span,
// else the last span before it, on its timeline.
std::string peakMoment(const trace::RankTimeline& t) {
  int64_t most = -1, when = 0;
  for (size_t i = 0; i < t.memory.size(); ++i) {
    const auto bytes = t.memory.bytes(i);
    int64_t tensors = 0;
    for (int role = 0; role < trace::kTensorRoleCount; ++role) tensors += bytes[static_cast<size_t>(role)];
    if (tensors > most) most = tensors, when = t.memory.time(i);
  }
  if (most < 0) return "";
  for (size_t i = trace::firstSpanFrom(t.collectives, static_cast<double>(when - t.longestCollective));
       i < t.collectives.size() && t.collectives[i].beginNs <= when; ++i) {
    const auto& c = t.collectives[i];
    if (c.endNs >= when) {
      return ", in the " + std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(c.op))) + " of " +
             placeOf(c.phase, trace::collectiveUnit(c.toEvent(0)));
    }
  }
  const trace::ComputeSpan* before = nullptr;
  for (size_t i = trace::firstSpanFrom(t.compute, static_cast<double>(when - t.longestCompute));
       i < t.compute.size() && t.compute[i].beginNs <= when; ++i) {
    if (t.compute[i].op != static_cast<uint8_t>(trace::ComputeKind::Step)) before = &t.compute[i];
  }
  if (!before) return "";
  return std::string(before->endNs >= when ? ", in the " : ", after the ") + placeOf(before->phase, before->text());
}

void addMemoryChanges(const DiffSide& a, const DiffSide& b, size_t ranks, std::vector<DiffChange>& out) {
  for (size_t r = 0; r < ranks; ++r) {
    const RankStats &ra = a.ranks[r], &rb = b.ranks[r];
    const double base = std::max<double>(1, static_cast<double>(ra.peakTotal));
    const std::string where = "rank " + std::to_string(r);
    const std::string moment = b.recording ? peakMoment(b.recording->rank(static_cast<int>(r))) : "";
    out.push_back({"peak memory", where + moment, static_cast<int>(r), DiffUnit::Bytes, double(ra.peakTotal),
                   double(rb.peakTotal), (double(rb.peakTotal) - double(ra.peakTotal)) / base});
    for (int role = 0; role < trace::kTensorRoleCount; ++role) {
      const double x = double(ra.peakByRole[static_cast<size_t>(role)]);
      const double y = double(rb.peakByRole[static_cast<size_t>(role)]);
      if (x == y) continue;
      out.push_back({std::string("peak ") + trace::memoryRoleName(static_cast<trace::MemoryRole>(role)), where,
                     static_cast<int>(r), DiffUnit::Bytes, x, y, (y - x) / base});
    }
  }
}

void addRankFigureChanges(const DiffSide& a, const DiffSide& b, size_t ranks, double stepA,
                          std::vector<DiffChange>& out) {
  const double step = std::max(stepA, 1e-12);
  const auto perStep = [](const RankStats& r, double total) {
    return r.recordedSteps > 0 ? total / r.recordedSteps : 0.0;
  };
  for (size_t r = 0; r < ranks; ++r) {
    const RankStats &ra = a.ranks[r], &rb = b.ranks[r];
    const std::string where = "rank " + std::to_string(r);
    const int rank = static_cast<int>(r);
    out.push_back({"exposed comm", where, rank, DiffUnit::Seconds, ra.steadyExposedCommSeconds,
                   rb.steadyExposedCommSeconds, (rb.steadyExposedCommSeconds - ra.steadyExposedCommSeconds) / step});
    out.push_back({"comm/compute overlap", where, rank, DiffUnit::Percent, ra.overlapPercent, rb.overlapPercent,
                   (rb.overlapPercent - ra.overlapPercent) / 100});
    const double waitA = perStep(ra, ra.waitCausedSeconds), waitB = perStep(rb, rb.waitCausedSeconds);
    out.push_back({"others waited for it", where, rank, DiffUnit::Seconds, waitA, waitB, (waitB - waitA) / step});
  }
}

struct Measure {
  double seconds = 0, bytes = 0;
  double exposed = -1;                             // a collective's: its seconds no compute hid; -1 for compute
  bool unsized = false;                            // a collective some of whose occurrences had no recorded size
  std::vector<std::pair<int64_t, int64_t>> spans;  // a collective's occurrences
  std::string figure, where, at;
};

// A rank's collectives and compute over steps [from, to), by what aligns them, their time and
// bytes per step; a collective's exposed time from the rank's exposed intervals (`exposed`).
std::map<std::string, Measure> alignedSpans(const trace::RankTimeline& t,
                                            const std::vector<std::pair<int64_t, int64_t>>& exposed, int64_t originNs,
                                            int rank, int from, int to) {
  // Where a span first happens, as the playhead takes a time: from the recording's origin.
  const auto at = [&](int64_t beginNs) {
    char text[48];
    std::snprintf(text, sizeof text, "%.3fus", static_cast<double>(beginNs - originNs) / 1e3);
    return std::string(text);
  };
  std::map<std::string, Measure> out;
  std::map<std::pair<int32_t, std::string>, int> seen;  // (step, key): how many so far, for the order
  // Per step recorded in detail (--recording alternate records every other; a long run's oldest
  // are folded): the steps of [from, to) this rank has spans of.
  std::set<int32_t> recorded;
  for (const auto& c : t.compute) {
    if (c.step >= from && c.step < to) recorded.insert(c.step);
  }
  for (const auto& c : t.collectives) {
    if (c.step >= from && c.step < to) recorded.insert(c.step);
  }
  const double steps = std::max<double>(1, static_cast<double>(recorded.size()));
  const std::string who = "rank " + std::to_string(rank) + ", ";
  std::vector<std::pair<int64_t, int64_t>> windows;  // the collectives compared, in order
  for (const auto& c : t.collectives) {
    if (c.step >= from && c.step < to) windows.emplace_back(c.beginNs, c.endNs);
  }
  const std::vector<int64_t> exposedNs = trace::coveredNs(windows, exposed);
  size_t nth = 0;
  for (const auto& c : t.collectives) {
    if (c.step < from || c.step >= to) continue;
    const std::string op = trace::collectiveOpName(static_cast<trace::CollectiveOp>(c.op));
    const std::string group = trace::processGroupName(static_cast<trace::ProcessGroup>(c.processGroup));
    std::string key =
        op + "|" + group + "|" + c.text() + "|" + std::to_string(c.phase) + "|" + std::to_string(c.microBatch);
    const int order = seen[{c.step, key}]++;
    key += "|" + std::to_string(order);
    Measure& m = out[key];
    m.figure = op + " [" + group + "]" + (order > 0 ? " #" + std::to_string(order + 1) : "");
    m.where = who + placeOf(c.phase, trace::collectiveUnit(c.toEvent(rank)));
    if (m.at.empty()) m.at = at(c.beginNs);
    m.seconds += static_cast<double>(c.endNs - c.beginNs) / 1e9 / steps;
    m.bytes += static_cast<double>(trace::collectiveSizeBytes(c.toEvent(rank))) / steps;
    m.unsized = m.unsized || c.sizeUnknown;
    m.exposed = std::max(0.0, m.exposed) + static_cast<double>(exposedNs[nth++]) / 1e9 / steps;
    m.spans.emplace_back(c.beginNs, c.endNs);
  }
  for (const auto& c : t.compute) {
    const auto kind = static_cast<trace::ComputeKind>(c.op);
    if (c.step < from || c.step >= to || kind == trace::ComputeKind::Step) continue;
    const std::string key =
        std::string("compute|") + trace::computeKindName(kind) + "|" + c.text() + "|" + std::to_string(c.phase);
    Measure& m = out[key];
    m.figure = std::string("compute (") + trace::computeKindName(kind) + ")";
    m.where = who + placeOf(c.phase, c.text());
    if (m.at.empty()) m.at = at(c.beginNs);
    m.seconds += static_cast<double>(c.endNs - c.beginNs) / 1e9 / steps;
  }
  return out;
}

// B's occurrences of a collective whose change passed the gate, marked with that change.
// Returns whether it marked them.
bool markPastGate(const DiffChange& change, const std::vector<std::pair<int64_t, int64_t>>& spans, double gate,
                  RunDiff& d) {
  const bool past = change.unit == DiffUnit::Bytes ? change.a != change.b : std::fabs(change.share) >= gate;
  if (!past) return false;
  const std::string text = diffChangeText(change);
  for (const auto& [begin, end] : spans) d.marks.push_back({change.rank, begin, end, change.b > change.a, text});
  return true;
}

void addTimelineChanges(const DiffSide& a, const DiffSide& b, size_t ranks, int from, int to, double stepA, double gate,
                        RunDiff& d) {
  const double step = std::max(stepA, 1e-12);
  for (size_t r = 0; r < ranks; ++r) {
    const int rank = static_cast<int>(r);
    const auto ma = alignedSpans(a.recording->rank(rank), a.recording->exposedCommCached(rank), a.recording->originNs(),
                                 rank, from, to);
    const auto mb = alignedSpans(b.recording->rank(rank), b.recording->exposedCommCached(rank), b.recording->originNs(),
                                 rank, from, to);
    double bytesA = 0;  // what the rank's collectives moved per step in A: a byte change's measure
    for (const auto& [key, x] : ma) bytesA += x.bytes;
    int onlyA = 0, onlyB = 0;
    std::string exampleA, exampleB;
    for (const auto& [key, x] : ma) {
      const auto it = mb.find(key);
      if (it == mb.end()) {
        if (onlyA++ == 0) exampleA = x.figure + " at " + x.where;
        continue;
      }
      const Measure& y = it->second;
      d.changes.push_back({x.figure, x.where, rank, DiffUnit::Seconds, x.seconds, y.seconds,
                           (y.seconds - x.seconds) / step, y.at, x.exposed, y.exposed});
      // One mark a span: its time's change where that passed the gate, else its bytes'.
      const bool timeMarked = x.exposed >= 0 && markPastGate(d.changes.back(), y.spans, gate, d);
      if (x.bytes != y.bytes && !x.unsized && !y.unsized) {  // a size unrecorded is no change of size
        d.changes.push_back({x.figure + " bytes", x.where, rank, DiffUnit::Bytes, x.bytes, y.bytes,
                             (y.bytes - x.bytes) / std::max(1.0, bytesA), y.at});
        if (!timeMarked) markPastGate(d.changes.back(), y.spans, gate, d);
      }
    }
    for (const auto& [key, y] : mb) {
      if (!ma.count(key) && onlyB++ == 0) exampleB = y.figure + " at " + y.where;
    }
    if (onlyA > 0)
      d.notes.push_back(std::to_string(onlyA) + " of A's spans have no counterpart in B, e.g. " + exampleA);
    if (onlyB > 0)
      d.notes.push_back(std::to_string(onlyB) + " of B's spans have no counterpart in A, e.g. " + exampleB);
  }
}

void noteWhatDiffers(const DiffSide& a, const DiffSide& b, RunDiff& d) {
  if (a.ranks.empty() || b.ranks.empty()) {
    d.notes.push_back(std::string(a.ranks.empty() ? "A" : "B") + " has no rank's figures: only the run's compared");
  } else if (a.ranks.size() != b.ranks.size()) {
    d.notes.push_back("A has " + std::to_string(a.ranks.size()) + " ranks and B " + std::to_string(b.ranks.size()) +
                      ": ranks 0 to " + std::to_string(std::min(a.ranks.size(), b.ranks.size()) - 1) +
                      " are compared rank by rank, the rest only in the run's figures");
  }
  if (a.config.strategy != b.config.strategy) {
    d.notes.push_back(std::string("the strategies differ (") + config::strategyName(a.config.strategy) + " and " +
                      config::strategyName(b.config.strategy) +
                      "): collectives align only where both ran the same op on the same unit");
  }
  if (!a.recording || !b.recording) {
    d.notes.push_back("a summary has no timeline: collectives and compute are not compared span by span");
  }
}

}  // namespace

Verdict judge(const RunDiff& d, double gate, std::string& reason) {
  const double change = d.stepB - d.stepA, relative = d.stepA > 0 ? change / d.stepA : 0;
  const bool timeKnown = d.stepsCompared >= 2;
  const bool timeMoved = timeKnown && std::fabs(change) > d.noise && std::fabs(relative) >= gate;
  const double memRelative = d.peakA > 0 ? (d.peakB - d.peakA) / d.peakA : 0;
  const bool memMoved = std::fabs(memRelative) >= gate;
  char time[256], memory[160];
  std::snprintf(time, sizeof time, "step time %+.1f%% (%s to %s, noise +-%s over %d steps)%s", 100 * relative,
                trace::formatDuration(d.stepA * 1e9).c_str(), trace::formatDuration(d.stepB * 1e9).c_str(),
                trace::formatDuration(d.noise * 1e9).c_str(), d.stepsCompared,
                !timeKnown                     ? ": too few steps to know its noise, not judged"
                : timeMoved                    ? ", past the gate"
                : std::fabs(change) <= d.noise ? ": within noise"
                                               : ": below the gate");
  std::snprintf(memory, sizeof memory, "peak memory %+.1f%% (%s to %s)%s", 100 * memRelative,
                trace::formatBytes(d.peakA).c_str(), trace::formatBytes(d.peakB).c_str(),
                memMoved ? ", past the gate" : ": below the gate");
  // What decided it first.
  const bool memoryFirst = memMoved && !(timeMoved && (change > 0) == (memRelative > 0));
  reason = memoryFirst ? std::string(memory) + "; " + time : std::string(time) + "; " + memory;
  if ((timeMoved && change > 0) || (memMoved && memRelative > 0)) return Verdict::Regression;
  if ((timeMoved && change < 0) || (memMoved && memRelative < 0)) return Verdict::Improvement;
  return Verdict::NoChange;
}

RunDiff diffRuns(const DiffSide& a, const DiffSide& b, const DiffOptions& options) {
  RunDiff d;
  d.warmup = options.warmup;
  const auto stepsA = slowestRankSteps(a), stepsB = slowestRankSteps(b);
  const size_t common = std::min(stepsA.size(), stepsB.size());
  const size_t from = std::min(common, static_cast<size_t>(std::max(0, options.warmup)));
  d.stepsCompared = static_cast<int>(common - from);
  const std::vector<double> comparedA(stepsA.begin() + from, stepsA.begin() + common);
  const std::vector<double> comparedB(stepsB.begin() + from, stepsB.begin() + common);
  meanAndSpread(comparedA, d.stepA, d.spreadA);
  meanAndSpread(comparedB, d.stepB, d.spreadB);
  const double errorA = standardError(comparedA), errorB = standardError(comparedB);
  d.noise = 2 * std::sqrt(errorA * errorA + errorB * errorB);
  for (const auto& r : a.ranks) d.peakA = std::max(d.peakA, static_cast<double>(r.peakTotal));
  for (const auto& r : b.ranks) d.peakB = std::max(d.peakB, static_cast<double>(r.peakTotal));
  d.changes.push_back(
      {"step time", "", -1, DiffUnit::Seconds, d.stepA, d.stepB, d.stepA > 0 ? (d.stepB - d.stepA) / d.stepA : 0});
  const size_t ranks = std::min(a.ranks.size(), b.ranks.size());
  noteWhatDiffers(a, b, d);
  addMemoryChanges(a, b, ranks, d.changes);
  addRankFigureChanges(a, b, ranks, d.stepA, d.changes);
  if (a.recording && b.recording) {
    addTimelineChanges(a, b, ranks, static_cast<int>(from), static_cast<int>(common), d.stepA, options.gate, d);
    std::sort(d.marks.begin(), d.marks.end(), [](const DiffMark& x, const DiffMark& y) {
      return x.rank != y.rank ? x.rank < y.rank : x.beginNs < y.beginNs;
    });
  }
  std::stable_sort(d.changes.begin(), d.changes.end(),
                   [](const DiffChange& x, const DiffChange& y) { return std::fabs(x.share) > std::fabs(y.share); });
  d.verdict = judge(d, options.gate, d.reason);
  return d;
}

}  // namespace shardscope::stats
