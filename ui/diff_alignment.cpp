#include "ui/diff_alignment.h"

#include <algorithm>
#include <limits>

namespace shardscope::ui {

namespace {

// The first group of `step`, or -1.
int firstOfStep(const std::vector<EventGroupMark>& marks, int step) {
  const auto it = std::find_if(marks.begin(), marks.end(), [&](const EventGroupMark& m) { return m.step == step; });
  return it == marks.end() ? -1 : static_cast<int>(it - marks.begin());
}

}  // namespace

int matchingGroup(const std::vector<EventGroupMark>& from, int k, const std::vector<EventGroupMark>& to) {
  if (k < 0 || k >= static_cast<int>(from.size())) return -1;
  const EventGroupMark& mark = from[static_cast<size_t>(k)];
  int occurrence = 0;  // of its label within its step, before it
  for (int i = k - 1; i >= 0 && from[static_cast<size_t>(i)].step == mark.step; --i) {
    occurrence += from[static_cast<size_t>(i)].labelId == mark.labelId;
  }
  const int first = firstOfStep(to, mark.step);
  if (first < 0) return -1;
  for (size_t j = static_cast<size_t>(first); j < to.size() && to[j].step == mark.step; ++j) {
    if (to[j].labelId == mark.labelId && occurrence-- == 0) return static_cast<int>(j);
  }
  return -1;
}

SessionAlignment alignSessions(const std::vector<std::vector<EventGroupMark>>& marks, int playheadSession,
                               double playheadNs, bool diff) {
  SessionAlignment out;
  out.playheadNs.assign(marks.size(), playheadNs);
  out.shiftNs.assign(marks.size(), 0.0);
  if (!diff || marks.size() < 2 || playheadSession < 0 || playheadSession > 1) return out;
  const auto& placed = marks[static_cast<size_t>(playheadSession)];
  const auto& other = marks[static_cast<size_t>(1 - playheadSession)];
  const int k = groupAtOrBefore(placed, playheadNs);
  if (k < 0) return out;
  const int step = placed[static_cast<size_t>(k)].step;
  const int startA = firstOfStep(marks[0], step), startB = firstOfStep(marks[1], step);
  if (startA >= 0 && startB >= 0) {
    out.step = step;
    out.shiftNs[0] = marks[0][static_cast<size_t>(startA)].tNs - marks[1][static_cast<size_t>(startB)].tNs;
  }
  const size_t otherIndex = static_cast<size_t>(1 - playheadSession);
  const int j = matchingGroup(placed, k, other);
  if (j >= 0) {
    const double into = playheadNs - placed[static_cast<size_t>(k)].tNs;
    const double end = static_cast<size_t>(j) + 1 < other.size() ? other[static_cast<size_t>(j) + 1].tNs
                                                                 : std::numeric_limits<double>::infinity();
    out.playheadNs[otherIndex] = std::min(other[static_cast<size_t>(j)].tNs + into, end);
  } else {
    // No such group in the other run: the moment drawn at the same place (A drawn shiftNs earlier).
    out.playheadNs[otherIndex] = playheadSession == 1 ? playheadNs + out.shiftNs[0] : playheadNs - out.shiftNs[0];
  }
  return out;
}

}  // namespace shardscope::ui
