#include "stats/pipeline_stats.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace shardscope::stats {

namespace {

using trace::ComputeKind;
using trace::ComputeSpan;
// Each step's bubble and length: its training step's span (the schedule's actions and the
// optimizer) less the time its forward and backward spans cover.
std::vector<std::pair<int64_t, int64_t>> bubblesByStep(const trace::RankTimeline& t) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const ComputeSpan& s : t.compute) {
    if (s.op == static_cast<uint8_t>(ComputeKind::Step) && s.endNs > s.beginNs) steps.emplace_back(s.beginNs, s.endNs);
  }
  const auto busy = trace::coveredNs(steps, trace::computeIntervals(t));
  std::vector<std::pair<int64_t, int64_t>> out;  // (bubble, step length)
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t length = steps[i].second - steps[i].first;
    out.emplace_back(length - busy[i], length);
  }
  return out;
}

// A (micro-batch, unit)'s activations are held from the end of its forward to the end of its last
// backward span (a whole backward's, or zero bubble's W after its I); a recomputation (a forward in
// the backward phase) changes nothing. The most micro-batches with a unit held at once.
int peakInFlight(const trace::RankTimeline& t) {
  using UnitKey = std::tuple<int32_t, int32_t, trace::NameId>;  // (step, micro-batch, unit)
  const auto isBackward = [](const ComputeSpan& s) { return s.op == static_cast<uint8_t>(ComputeKind::Backward); };
  const auto isForward = [](const ComputeSpan& s) {
    return s.op == static_cast<uint8_t>(ComputeKind::Forward) &&
           s.phase != static_cast<uint8_t>(trace::Phase::Backward);
  };
  std::map<UnitKey, int> backwardsLeft;
  std::vector<std::pair<int64_t, const ComputeSpan*>> ends;
  for (const ComputeSpan& s : t.compute) {
    if (s.microBatch <= 0 || !(isForward(s) || isBackward(s))) continue;
    if (isBackward(s)) ++backwardsLeft[{s.step, s.microBatch, s.name}];
    ends.emplace_back(s.endNs, &s);
  }
  std::stable_sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::set<UnitKey> open;                           // units whose activations are held
  std::map<std::pair<int32_t, int32_t>, int> held;  // (step, micro-batch) -> its units held
  int peak = 0;
  for (const auto& [when, s] : ends) {
    const std::pair<int32_t, int32_t> batch{s->step, s->microBatch};
    const UnitKey unit{s->step, s->microBatch, s->name};
    // A unit with two forward spans (the root on a stage that holds both the embedding and the
    // head: zbv's rank 0) is held once.
    if (isForward(*s)) {
      if (open.insert(unit).second) ++held[batch];
    } else if (--backwardsLeft[unit] == 0 && open.erase(unit) > 0) {
      if (auto it = held.find(batch); it != held.end() && --it->second == 0) held.erase(it);
    }
    peak = std::max(peak, static_cast<int>(held.size()));
  }
  return peak;
}

}  // namespace

PipelineFigures pipelineFigures(const trace::RankTimeline& t) {
  PipelineFigures out;
  const auto bubbles = bubblesByStep(t);
  const size_t first = bubbles.size() > 1 ? 1 : 0;  // the first step warms up
  int64_t bubble = 0, length = 0;
  for (size_t i = first; i < bubbles.size(); ++i) {
    bubble += bubbles[i].first;
    length += bubbles[i].second;
  }
  if (bubbles.size() > first) out.bubbleSecondsPerStep = bubble / 1e9 / static_cast<double>(bubbles.size() - first);
  if (length > 0) out.bubbleShare = static_cast<double>(bubble) / static_cast<double>(length);
  out.peakMicroBatchesInFlight = peakInFlight(t);
  return out;
}

}  // namespace shardscope::stats
