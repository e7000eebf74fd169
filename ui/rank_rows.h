// Which rows the timeline draws for a session's ranks. Up to kRanksUnfolded ranks, one row each;
// a larger job (a launched job of 16, 64 ranks) folds consecutive ranks into at most
// kRanksUnfolded groups, each drawn as one row showing the group's rank with the highest memory
// peak (a measured rank, named as such, never a blend). Clicking a group's label expands it into
// its ranks' own rows, and clicking again folds it. The rows, not the ranks, set the frame's cost.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "trace/run_recording.h"

namespace shardscope::ui {

constexpr int kRanksUnfolded = 8;

struct RankRow {
  int rank = 0;        // the rank drawn: its own, or for a folded group its highest peak's
  int group = -1;      // the group it belongs to when the ranks are grouped; -1: not grouped
  int groupFirst = 0;  // the group's ranks, [groupFirst, groupFirst + groupCount)
  int groupCount = 1;
  bool folded = false;     // a whole group in one row
  bool groupHead = false;  // the first row of an expanded group (its label folds it again)
  // One line for the ranks of a PyTorch job whose traces were not given ("0 to 2, 4"): no lanes.
  std::string missingRanks;
};

// Whether a rank recorded anything at all: steps, memory, collectives or compute.
bool recordedAnything(const trace::RankTimeline& rank);

// How many of ranks [first, first + count) recorded anything: a PyTorch job's traces may be of a
// few of its ranks only (the others' rows are empty, not idle).
int ranksWithRecords(const trace::RunRecording& recording, int first, int count);

// Ranks per group: 1 (no grouping) up to kRanksUnfolded ranks, else enough that the groups number
// at most kRanksUnfolded.
int rankGroupSize(int ranks);

// The rows for `recording`'s ranks, with the groups in `expanded` shown rank by rank. With
// `foldUnrecorded` (a PyTorch job opened with some of its ranks' traces), when at most
// kRanksUnfolded ranks recorded anything, each of those has its row and the others share one line
// at the end, instead of an empty row each.
std::vector<RankRow> rankRows(const trace::RunRecording& recording, const std::set<int>& expanded,
                              bool foldUnrecorded = false);

// A click on a group's label: expands it, or folds it again.
void toggleRankGroup(std::set<int>& expanded, int group);

}  // namespace shardscope::ui
