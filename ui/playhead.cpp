#include "ui/playhead.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace shardscope::ui {

namespace {

// Two marks closer than this are one place for the arrow keys (a group that took no time).
constexpr double kSamePlaceNs = 1.0;

// A span taken as the event group it began: from `beginNs`, of `kind`, labelled `label`.
template <class Span>
trace::GroupSpan groupOf(const Span& span, int64_t beginNs, trace::GroupKind kind, const std::string& label,
                         trace::NameHolder* labels) {
  trace::GroupSpan g;
  g.beginNs = beginNs;
  g.endNs = span.endNs;
  g.step = span.step;
  g.microBatch = span.microBatch;
  g.phase = span.phase;
  g.op = static_cast<uint8_t>(kind);
  g.name = labels ? labels->intern(label) : trace::internName(label);
  return g;
}

// A recording without Group events (written by shardscope before it recorded them, still read):
// each compute span and each collective's issue, per rank.
std::vector<std::vector<trace::GroupSpan>> fallbackGroups(const trace::RunRecording& rec, trace::NameHolder* labels) {
  std::vector<std::vector<trace::GroupSpan>> out(static_cast<size_t>(rec.ranks()));
  for (int r = 0; r < rec.ranks(); ++r) {
    auto& groups = out[static_cast<size_t>(r)];
    for (const auto& c : rec.rank(r).compute) {
      const auto kind = static_cast<trace::ComputeKind>(c.op);
      if (kind == trace::ComputeKind::Step || trace::isOffloadSpan(c)) continue;
      const auto group = kind == trace::ComputeKind::Backward    ? trace::GroupKind::Backward
                         : kind == trace::ComputeKind::Optimizer ? trace::GroupKind::Optimizer
                                                                 : trace::GroupKind::Forward;
      groups.push_back(
          groupOf(c, c.beginNs, group, std::string(trace::computeKindName(kind)) + " " + c.text(), labels));
    }
    for (const auto& c : rec.rank(r).collectives) {
      const std::string label =
          std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(c.op))) + " " + trace::collectiveUnit(c);
      groups.push_back(groupOf(c, c.issueNs, trace::GroupKind::Collective, label, labels));
    }
    std::stable_sort(groups.begin(), groups.end(),
                     [](const trace::GroupSpan& a, const trace::GroupSpan& b) { return a.beginNs < b.beginNs; });
  }
  return out;
}

// Times can only grow with k; a rank's clock jitter must not make the arrows go backwards. From
// mark `from` on.
void keepMarksInOrder(std::vector<EventGroupMark>& marks, size_t from) {
  for (size_t k = std::max<size_t>(from, 1); k < marks.size(); ++k) {
    marks[k].tNs = std::max(marks[k].latestNs, marks[k - 1].tNs);
  }
}

// Marks k from marks.size() on, for as many groups as every rank has: `groupsOf(r)` is rank r's.
template <class GroupsOf>
void appendMarks(const GroupsOf& groupsOf, int ranks, double originNs, std::vector<EventGroupMark>& marks) {
  size_t count = SIZE_MAX;
  for (int r = 0; r < ranks; ++r) count = std::min(count, groupsOf(r).size());
  const size_t from = marks.size();
  if (ranks == 0 || count <= from) return;
  marks.reserve(count);
  for (size_t k = from; k < count; ++k) {
    const trace::GroupSpan& first = groupsOf(0)[k];
    EventGroupMark m;
    m.labelId = first.name;
    m.step = first.step;
    m.kind = static_cast<trace::GroupKind>(first.op);
    int64_t latest = 0;
    for (int r = 0; r < ranks; ++r) {
      // A paused group begins, for the view, when the rank went on: before that nothing happened.
      const trace::GroupSpan& g = groupsOf(r)[k];
      latest = std::max(latest, std::max(g.beginNs, g.endNs));
    }
    m.latestNs = m.tNs = static_cast<double>(latest) - originNs;
    marks.push_back(m);
  }
  keepMarksInOrder(marks, from);
}

// The marks of groups folded away, the first `count`, dropped; the rest kept in order from the
// new first, as making them all again would.
void dropFrontMarks(std::vector<EventGroupMark>& marks, size_t count) {
  marks.erase(marks.begin(), marks.begin() + static_cast<std::ptrdiff_t>(count));
  if (!marks.empty()) marks.front().tNs = marks.front().latestNs;
  keepMarksInOrder(marks, 1);
}

bool recordsGroups(const trace::RunRecording& rec) {
  for (int r = 0; r < rec.ranks(); ++r) {
    if (!rec.rank(r).groups.empty()) return true;
  }
  return false;
}

bool sameGroup(const trace::GroupSpan& a, const trace::GroupSpan& b) {
  return a.beginNs == b.beginNs && a.endNs == b.endNs && a.step == b.step && a.microBatch == b.microBatch &&
         a.name == b.name && a.op == b.op && a.phase == b.phase;
}

// How many groups every rank folded away since `basis` was taken, the same number each, where
// its groups otherwise only grew at their end: the same first (unless folded) and, where it was,
// the same group at the old last place less the fold (a group inserted before it moves it on).
// Nothing where that is not so.
std::optional<size_t> foldedAndOnlyGrew(const trace::RunRecording& rec, const GroupMarksBasis& basis) {
  if (basis.originNs != rec.originNs() || basis.sizes.size() != static_cast<size_t>(rec.ranks())) return std::nullopt;
  std::optional<size_t> dropped;
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    const size_t at = static_cast<size_t>(r);
    if (t.folded.groups < basis.folded[at]) return std::nullopt;
    const size_t folded = t.folded.groups - basis.folded[at];
    if (dropped && *dropped != folded) return std::nullopt;
    dropped = folded;
    const size_t was = basis.sizes[at];
    if (folded > 0 && was <= folded) return std::nullopt;  // nothing left to tell a shift by
    const size_t kept = was - folded;
    if (t.groups.size() < kept) return std::nullopt;
    if (kept > 0 && ((folded == 0 && !sameGroup(t.groups.front(), basis.firsts[at])) ||
                     !sameGroup(t.groups[kept - 1], basis.lasts[at]))) {
      return std::nullopt;
    }
  }
  return dropped.value_or(0);
}

void holdLabels(const std::vector<EventGroupMark>& marks, size_t from, trace::NameHolder& names) {
  for (size_t k = from; k < marks.size(); ++k) names.hold(marks[k].labelId);
}

void takeBasis(const trace::RunRecording& rec, GroupMarksBasis& basis) {
  basis.fromGroups = recordsGroups(rec);
  basis.originNs = rec.originNs();
  basis.sizes.assign(static_cast<size_t>(rec.ranks()), 0);
  basis.folded.assign(static_cast<size_t>(rec.ranks()), 0);
  basis.firsts.assign(static_cast<size_t>(rec.ranks()), trace::GroupSpan{});
  basis.lasts.assign(static_cast<size_t>(rec.ranks()), trace::GroupSpan{});
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& groups = rec.rank(r).groups;
    basis.sizes[static_cast<size_t>(r)] = groups.size();
    basis.folded[static_cast<size_t>(r)] = rec.rank(r).folded.groups;
    if (groups.empty()) continue;
    basis.firsts[static_cast<size_t>(r)] = groups.front();
    basis.lasts[static_cast<size_t>(r)] = groups.back();
    basis.names.hold(groups.front().name);
    basis.names.hold(groups.back().name);
  }
}

}  // namespace

std::vector<EventGroupMark> eventGroupMarks(const trace::RunRecording& rec, trace::NameHolder* labels) {
  std::vector<EventGroupMark> marks;
  if (rec.ranks() == 0 || rec.originNs() == INT64_MAX) return marks;
  const double origin = static_cast<double>(rec.originNs());
  if (recordsGroups(rec)) {
    appendMarks([&](int r) -> const std::vector<trace::GroupSpan>& { return rec.rank(r).groups; }, rec.ranks(), origin,
                marks);
  } else {
    const auto fallback = fallbackGroups(rec, labels);
    appendMarks([&](int r) -> const std::vector<trace::GroupSpan>& { return fallback[static_cast<size_t>(r)]; },
                rec.ranks(), origin, marks);
  }
  return marks;
}

void updateGroupMarks(const trace::RunRecording& rec, std::vector<EventGroupMark>& marks, GroupMarksBasis& basis) {
  // Marks made from compute spans and collectives (no group recorded yet) are not extended by groups.
  const bool fromGroups = basis.fromGroups && recordsGroups(rec) && !marks.empty();
  const std::optional<size_t> dropped = fromGroups ? foldedAndOnlyGrew(rec, basis) : std::nullopt;
  basis.extended = dropped && *dropped <= marks.size();
  basis.droppedMarks = basis.extended ? *dropped : 0;
  if (basis.extended) {
    if (basis.droppedMarks > 0) dropFrontMarks(marks, basis.droppedMarks);
    const size_t from = marks.size();
    appendMarks([&](int r) -> const std::vector<trace::GroupSpan>& { return rec.rank(r).groups; }, rec.ranks(),
                static_cast<double>(rec.originNs()), marks);
    holdLabels(marks, from, basis.names);
  } else {
    trace::NameHolder labels;  // the new marks' names, before the old ones are let go
    marks = eventGroupMarks(rec, &labels);
    holdLabels(marks, 0, labels);
    basis.names = std::move(labels);
  }
  takeBasis(rec, basis);
}

int groupAtOrBefore(const std::vector<EventGroupMark>& marks, double tNs) {
  auto it = std::upper_bound(marks.begin(), marks.end(), tNs + kSamePlaceNs / 2,
                             [](double t, const EventGroupMark& m) { return t < m.tNs; });
  return static_cast<int>(it - marks.begin()) - 1;
}

double nextGroupTime(const std::vector<EventGroupMark>& marks, double tNs) {
  auto it = std::upper_bound(marks.begin(), marks.end(), tNs + kSamePlaceNs,
                             [](double t, const EventGroupMark& m) { return t < m.tNs; });
  return it == marks.end() ? tNs : it->tNs;
}

double previousGroupTime(const std::vector<EventGroupMark>& marks, double tNs) {
  auto it = std::lower_bound(marks.begin(), marks.end(), tNs - kSamePlaceNs,
                             [](const EventGroupMark& m, double t) { return m.tNs < t; });
  return it == marks.begin() ? tNs : std::prev(it)->tNs;
}

namespace {

// Why `step` (from @STEP) names no step the run has event groups in, or nothing: the steps count
// from 0, as the timeline's s0, s1, ... do, so a 3-step run's last is @2.
std::optional<std::string> stepOutsideRun(const std::string& text, int step, const std::vector<EventGroupMark>& marks,
                                          const char* option) {
  if (step < 0 || marks.empty()) return std::nullopt;
  int first = marks.front().step, last = marks.front().step;
  for (const auto& m : marks) {
    first = std::min(first, m.step);
    last = std::max(last, m.step);
  }
  if (step >= first && step <= last) return std::nullopt;
  return std::string(option) + " '" + text + "' names step " + std::to_string(step) +
         ", but this run's event groups are in steps " + std::to_string(first) + " to " + std::to_string(last) +
         " (@STEP counts from 0, as the timeline's s0, s1, ... do): name one of those.";
}

}  // namespace

std::optional<double> resolvePlayheadPosition(const std::string& text, const std::vector<EventGroupMark>& marks,
                                              std::string& error, const char* option) {
  // A time: a number and a unit.
  for (const auto& [suffix, ns] : {std::pair<const char*, double>{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}) {
    const std::string unit = suffix;
    if (text.size() <= unit.size() || text.compare(text.size() - unit.size(), unit.size(), unit) != 0) continue;
    const std::string number = text.substr(0, text.size() - unit.size());
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end && *end == '\0' && !number.empty() && std::isfinite(value) && value >= 0) return value * ns;
    break;  // "abcms": not a time; perhaps a label
  }
  std::string label = text;
  int step = -1;
  if (const auto at = text.rfind('@'); at != std::string::npos) {
    label = text.substr(0, at);
    char* end = nullptr;
    const long parsed = std::strtol(text.c_str() + at + 1, &end, 10);
    if (end && *end == '\0' && at + 1 < text.size() && parsed >= 0)
      step = static_cast<int>(parsed);
    else
      label = text;
  }
  for (const auto& m : marks) {
    if (m.label() == label && (step < 0 || m.step == step)) return m.tNs;
  }
  if (auto outside = stepOutsideRun(text, step, marks, option)) {
    error = *outside;
    return std::nullopt;
  }
  std::string examples;
  for (const auto& m : marks) {
    if (examples.find("'" + m.label() + "'") != std::string::npos) continue;
    if (!examples.empty()) examples += ", ";
    examples += "'" + m.label() + "'";
    if (examples.size() > 160) break;
  }
  error = std::string(option) + " '" + text +
          "' is neither a time (a number with ns, us, ms or s: e.g. 12.5ms) nor an event group of " + "this run" +
          (step >= 0 ? " in step " + std::to_string(step) : std::string()) +
          (examples.empty() ? std::string(" (it recorded none)")
                            : " (its groups: " + examples + "; add @STEP for a later step)") +
          ".";
  return std::nullopt;
}

std::optional<std::pair<double, double>> resolveZoomWindow(const std::string& text,
                                                           const std::vector<EventGroupMark>& marks,
                                                           std::string& error) {
  const auto dots = text.find("..");
  if (dots == std::string::npos || dots == 0 || dots + 2 >= text.size()) {
    error = "--zoom '" + text +
            "' is not FROM..TO: give two times or event groups joined by '..', e.g. "
            "9.2s..12s or 'step start@1..optimizer step@3'.";
    return std::nullopt;
  }
  const auto from = resolvePlayheadPosition(text.substr(0, dots), marks, error, "--zoom's FROM");
  if (!from) return std::nullopt;
  const auto to = resolvePlayheadPosition(text.substr(dots + 2), marks, error, "--zoom's TO");
  if (!to) return std::nullopt;
  if (!(*to > *from)) {
    error = "--zoom '" + text + "': FROM is not before TO; give the earlier time or event group first.";
    return std::nullopt;
  }
  return std::pair{*from, *to};
}

void advancePlayhead(Playhead& p, double seconds, double durationNs) {
  if (!p.playing) return;
  p.placed = true;
  p.tNs += seconds * 1e9 * std::clamp(p.speed, kMinPlaySpeed, kMaxPlaySpeed);
  if (p.tNs >= durationNs) {
    p.tNs = durationNs;
    p.playing = false;
  }
}

void keepInView(TimeAxis& axis, double tNs) {
  const double span = axis.endNs - axis.beginNs;
  if (tNs >= axis.beginNs && tNs <= axis.endNs) return;
  axis.beginNs = std::max(0.0, tNs - 0.1 * span);
  axis.endNs = axis.beginNs + span;
  axis.userMoved = true;
}

}  // namespace shardscope::ui
