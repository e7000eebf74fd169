// A diff session lines two runs up by the algorithm, not by the clock. While the Diff tab is in
// front with A (session 0) and B (session 1) open, A's timeline is drawn shifted so that the step
// the playhead is in starts where B's does, and the playhead stands in each run at the same moment
// of the algorithm: the same event group (same step, same label, same occurrence within the
// step), as far past its start as in the run the playhead was placed in (never past the group's
// end in the other). Everywhere else every session shares the playhead's time.
#pragma once

#include <vector>

#include "ui/playhead.h"

namespace shardscope::ui {

struct SessionAlignment {
  std::vector<double> playheadNs;  // each session's playhead, from its own origin
  std::vector<double> shiftNs;     // each session drawn this much earlier (A's; 0 for the others)
  int step = -1;                   // the step they are lined up at; -1: not lined up
};

// The index in `to` of the event group that is `from[k]` in the other run, or -1.
int matchingGroup(const std::vector<EventGroupMark>& from, int k, const std::vector<EventGroupMark>& to);

// `marks`: each session's event groups. `diff`: the two first sessions are a diff's A and B.
SessionAlignment alignSessions(const std::vector<std::vector<EventGroupMark>>& marks, int playheadSession,
                               double playheadNs, bool diff);

}  // namespace shardscope::ui
