#include "stats/pipeline_actions.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>

namespace shardscope::stats {

using config::PipeActionKind;

namespace {

// Where compute first runs from `from` on (`intervals` sorted and disjoint): the caller knows some
// runs before its window ends.
int64_t firstComputeIn(const std::vector<std::pair<int64_t, int64_t>>& intervals, int64_t from) {
  const auto it = std::upper_bound(intervals.begin(), intervals.end(), from,
                                   [](int64_t t, const std::pair<int64_t, int64_t>& i) { return t < i.second; });
  return it == intervals.end() ? from : std::max(it->first, from);
}

}  // namespace

std::vector<MeasuredAction> measuredActions(const trace::RankTimeline& t) {
  std::vector<MeasuredAction> out;
  bool open = false;  // the last action has not yet ended
  for (const trace::GroupSpan& g : t.groups) {
    const auto kind = static_cast<trace::GroupKind>(g.op);
    const auto action = config::parseActionText(g.text());
    const bool ends = action || kind == trace::GroupKind::Optimizer || kind == trace::GroupKind::StepStart;
    if (open && ends) {
      out.back().endNs = g.beginNs;
      open = false;
    }
    if (action) {
      out.push_back({*action, g.step, g.beginNs, g.beginNs, 0, g.beginNs});
      open = true;
    }
  }
  if (open) out.pop_back();  // the recording stopped inside it: its end is unknown
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const auto& a : out) windows.emplace_back(a.beginNs, a.endNs);
  const auto intervals = trace::computeIntervals(t);
  const auto busy = trace::coveredNs(windows, intervals);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].computeNs = busy[i];
    if (busy[i] > 0) out[i].computeBeginNs = firstComputeIn(intervals, out[i].beginNs);
  }
  return out;
}

namespace {

// The micro-batches `held` names, ascending, each with what its held stages' forwards left held.
std::vector<HeldMicroBatch> heldBatches(const config::HeldActivations& held,
                                        const std::map<std::pair<int, int>, int64_t>& leftHeld) {
  std::vector<HeldMicroBatch> out;
  for (const auto& key : held.stageMicroBatches()) {  // ordered by stage: gather by micro-batch
    auto it = std::find_if(out.begin(), out.end(), [&](const HeldMicroBatch& b) { return b.microBatch == key.second; });
    if (it == out.end()) it = out.insert(out.end(), {key.second, 0});
    const auto bytes = leftHeld.find(key);
    if (bytes != leftHeld.end()) it->bytes += bytes->second;
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.microBatch < y.microBatch; });
  return out;
}

}  // namespace

std::vector<HeldAt> activationsHeld(const std::vector<MeasuredAction>& actions, const trace::RankTimeline* timeline) {
  config::HeldActivations held;
  std::map<std::pair<int, int>, int64_t> leftHeld;  // (stage, micro-batch) -> its forward's, this step
  std::vector<HeldAt> out;
  int32_t step = INT32_MIN;
  for (const auto& a : actions) {
    if (!config::isComputeAction(a.action.kind)) continue;
    if (a.step != step) {  // every step frees what it held (a step recorded in part leaves nothing)
      if (!out.empty() && out.back().microBatches > 0) out.push_back({a.beginNs, 0, {}});
      held = config::HeldActivations();
      leftHeld.clear();
      step = a.step;
    }
    held.run(a.action);
    if (timeline && a.action.kind == PipeActionKind::Forward) {
      leftHeld[{a.action.stage, a.action.microBatch}] = activationBytesLeft(*timeline, a);
    }
    out.push_back({a.endNs, held.microBatches(), heldBatches(held, leftHeld)});
  }
  return out;
}

std::set<std::pair<int, int>> activationsHeldAt(const std::vector<MeasuredAction>& actions, int64_t ns) {
  // The last action begun by then, and back to its step's first: every step frees what it held.
  auto last = std::upper_bound(actions.begin(), actions.end(), ns,
                               [](int64_t t, const MeasuredAction& a) { return t < a.beginNs; });
  if (last == actions.begin()) return {};
  const int32_t step = std::prev(last)->step;
  auto first = std::prev(last);
  while (first != actions.begin() && std::prev(first)->step == step) --first;
  config::HeldActivations held;
  for (auto it = first; it != last; ++it) {
    if (config::isComputeAction(it->action.kind) && it->endNs <= ns) held.run(it->action);
  }
  return held.stageMicroBatches();
}

int64_t activationBytesLeft(const trace::RankTimeline& t, const MeasuredAction& a) {
  if (a.action.kind != config::PipeActionKind::Forward || t.memory.empty()) return 0;
  const auto activation = static_cast<size_t>(trace::MemoryRole::Activation);
  return t.memory.bytesAt(static_cast<double>(a.endNs))[activation] -
         t.memory.bytesAt(static_cast<double>(a.beginNs))[activation];
}

std::map<std::pair<int, int>, int64_t> activationBytesHeldAt(const trace::RankTimeline& t,
                                                             const std::vector<MeasuredAction>& actions, int64_t ns) {
  std::map<std::pair<int, int>, int64_t> out;
  const auto held = activationsHeldAt(actions, ns);
  if (held.empty()) return out;
  // The step's forwards before `ns`: the last of each (stage, micro-batch) is the one held.
  auto last = std::upper_bound(actions.begin(), actions.end(), ns,
                               [](int64_t when, const MeasuredAction& a) { return when < a.beginNs; });
  const int32_t step = std::prev(last)->step;
  for (auto it = last; it != actions.begin() && std::prev(it)->step == step;) {
    --it;
    const std::pair<int, int> key{it->action.stage, it->action.microBatch};
    if (it->action.kind == PipeActionKind::Forward && held.count(key) && !out.count(key))
      out[key] = activationBytesLeft(t, *it);
  }
  return out;
}

std::vector<double> activationBytesByMicroBatch(const trace::RankTimeline& t,
                                                const std::vector<MeasuredAction>& actions) {
  std::map<int32_t, std::map<int, int64_t>> byStep;  // step -> micro-batch -> bytes left held
  for (const auto& a : actions) {
    if (a.action.kind == config::PipeActionKind::Forward)
      byStep[a.step][a.action.microBatch] += activationBytesLeft(t, a);
  }
  if (byStep.empty() || t.memory.empty()) return {};
  auto from = byStep.begin();
  if (byStep.size() > 1) ++from;               // the first step warms up
  std::map<int, std::pair<double, int>> sums;  // micro-batch -> (bytes, steps)
  for (auto it = from; it != byStep.end(); ++it) {
    for (const auto& [mb, bytes] : it->second) {
      sums[mb].first += static_cast<double>(bytes);
      ++sums[mb].second;
    }
  }
  std::vector<double> out(static_cast<size_t>(sums.rbegin()->first + 1), 0.0);
  for (const auto& [mb, sum] : sums) out[static_cast<size_t>(mb)] = sum.first / sum.second;
  return out;
}

std::optional<config::ActionDurations> meanActionSeconds(const std::vector<std::vector<MeasuredAction>>& ranks) {
  int32_t firstStep = INT32_MAX, lastStep = INT32_MIN;
  for (const auto& actions : ranks) {
    for (const auto& a : actions) {
      firstStep = std::min(firstStep, a.step);
      lastStep = std::max(lastStep, a.step);
    }
  }
  const int32_t from = lastStep > firstStep ? firstStep + 1 : firstStep;  // the first step warms up
  std::array<double, 4> sum{};                                            // F, B, I, W
  std::array<int, 4> count{};
  for (const auto& actions : ranks) {
    for (const auto& a : actions) {
      if (!config::isComputeAction(a.action.kind) || a.step < from) continue;
      const auto k = static_cast<size_t>(a.action.kind);
      sum[k] += static_cast<double>(a.computeNs) / 1e9;
      ++count[k];
    }
  }
  if (count[0] == 0) return std::nullopt;
  const auto mean = [&](size_t k, double otherwise) { return count[k] > 0 ? sum[k] / count[k] : otherwise; };
  config::ActionDurations d;
  d.forward = mean(0, 0);
  d.backward = mean(1, 2 * d.forward);
  d.backwardInput = mean(2, d.forward);
  d.backwardWeight = mean(3, d.forward);
  return d;
}

double plannedStep(const Plan& plan) {
  double makespan = 0;
  for (const auto& rank : plan) {
    for (const auto& a : rank) makespan = std::max(makespan, a.end);
  }
  return makespan;
}

std::vector<PlannedBubble> plannedBubbles(const Plan& plan) {
  const double makespan = plannedStep(plan);
  std::vector<PlannedBubble> out;
  for (const auto& rank : plan) {
    double busy = 0;
    for (const auto& a : rank) busy += a.end - a.start;
    const double bubble = makespan - busy;
    out.push_back({bubble, makespan > 0 ? bubble / makespan : 0});
  }
  return out;
}

}  // namespace shardscope::stats
