// The playhead: one time on every session's timeline (relative to each session's origin, as the
// shared axis is), which the breakdown, "who holds what" and the ring animation all show. It plays
// at a fraction of the run's real time and steps from one event group to the next: the groups the
// ranks recorded at the hook points of the real algorithm (trace::GroupKind), so a step here is
// what one Step of a gated live run is.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trace/names.h"
#include "trace/run_recording.h"
#include "ui/time_axis.h"

namespace shardscope::ui {

struct Playhead {
  double tNs = 0;       // relative to the session's origin
  bool placed = false;  // false: at the newest recorded time (live edge, or the end)
  bool playing = false;
  double speed = 0.05;  // fraction of real time: 0.01 .. 1
  int session = 0;      // whose event groups the arrow keys step through
};
constexpr double kMinPlaySpeed = 0.01;
constexpr double kMaxPlaySpeed = 1.0;

// One event group on one clock: `tNs` is when the last rank entered it, so at that time every rank
// has reached it; the label and step are rank 0's.
struct EventGroupMark {
  double tNs = 0;       // relative to the recording's origin, never before the mark before
  double latestNs = 0;  // the ranks' latest time at the group, before that was applied
  // The group's label, interned (trace/names.h): a live run's marks are made again as it records,
  // and a string each would be most of their cost. Valid while its recording is, or while the marks'
  // GroupMarksBasis holds it.
  trace::NameId labelId = trace::kEmptyName;
  const std::string& label() const { return trace::nameOf(labelId); }
  int step = -1;
  trace::GroupKind kind = trace::GroupKind::StepStart;
};

// The k-th group of every rank, aligned (ranks run the same program). From the Group events; a
// recording made before they existed falls back to compute spans and collective issues, whose
// labels are made here: held by `labels` (none: kept for the process).
std::vector<EventGroupMark> eventGroupMarks(const trace::RunRecording& recording, trace::NameHolder* labels = nullptr);

// What a session's marks were made from: the recording's origin, and each rank's count of groups,
// its first and its last.
struct GroupMarksBasis {
  bool fromGroups = false;  // the marks were made from Group events (not a recording's fallback)
  int64_t originNs = INT64_MAX;
  std::vector<size_t> sizes;
  std::vector<size_t> folded;  // each rank's groups folded away by then (FoldedSteps::groups)
  std::vector<trace::GroupSpan> firsts, lasts;
  bool extended = false;    // the last update only added the new groups' marks
  size_t droppedMarks = 0;  // and dropped this many from the front, whose groups were folded
  // The marks' labels and the names of `firsts` and `lasts`, held while they are kept: the window
  // keeps them a while after their session's recording was closed or replaced.
  trace::NameHolder names;
};

// `marks` (made from `basis`) brought up to the recording: where every rank's groups only grew at
// their end since (a live run), only the new groups' marks are made (at 13.7 million events, making
// them all took 12 ms); where every rank also folded the same number of groups away (a live run
// past its window, once every rank has passed the step it folds through: their step ends come
// milliseconds apart), their marks are dropped first. Otherwise all of them are made again.
void updateGroupMarks(const trace::RunRecording& recording, std::vector<EventGroupMark>& marks, GroupMarksBasis& basis);

// The mark at or before tNs (index), or -1.
int groupAtOrBefore(const std::vector<EventGroupMark>& marks, double tNs);
// The playhead's next / previous position when stepping by groups; `tNs` unchanged at either end.
double nextGroupTime(const std::vector<EventGroupMark>& marks, double tNs);
double previousGroupTime(const std::vector<EventGroupMark>& marks, double tNs);

// Where `--at TEXT` puts the playhead: a time ("12.5ms", "800us", "1.2s", "5000ns") or an event
// group by its label, the first of the run or of step S with "@S" ("backward blocks.1@1"). An
// error names the text and what is allowed otherwise.
std::optional<double> resolvePlayheadPosition(const std::string& text, const std::vector<EventGroupMark>& marks,
                                              std::string& error, const char* option = "--at");

// Where `--zoom FROM..TO` puts the timelines' visible window: each end as --at takes it (a time,
// or an event group, e.g. "step start@1..optimizer step@3" or "9.2s..12s"), FROM before TO.
std::optional<std::pair<double, double>> resolveZoomWindow(const std::string& text,
                                                           const std::vector<EventGroupMark>& marks,
                                                           std::string& error);

// Moves a playing playhead on by `seconds` of wall time at its speed; stops at `durationNs`.
void advancePlayhead(Playhead& playhead, double seconds, double durationNs);
// Pans `axis` (without zooming) so a playhead that left the visible window is back in it.
void keepInView(TimeAxis& axis, double tNs);

}  // namespace shardscope::ui
