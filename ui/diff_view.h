// The Diff tab: the first two sessions (A, then B: `view --diff A B`) diffed (stats/run_diff.h):
// the verdict, then the largest changes, each a row; clicking one moves the playhead to where it
// happens in B, at the first step compared.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "stats/run_diff.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// Kept between frames: the diff walks every span of both runs, so only when the store changes.
struct DiffViewState {
  uint64_t version = UINT64_MAX;
  std::chrono::steady_clock::time_point lastPass;  // while a run records, a pass at most every 2 s
  stats::RunDiff diff;
  std::string error;       // why there is no diff
  std::string pendingAt;   // a row clicked: where the playhead goes (the window applies it)
  std::string selectedAt;  // and the rows at that place, shown selected (view --diff --at selects too)
};

// Diffs sessions 0 and 1 (with their figures, `stats`) into `state` when the store has changed.
void refreshDiff(DiffViewState& state, const std::vector<Session>& sessions,
                 const std::vector<std::vector<stats::RankStats>>& stats, uint64_t storeVersion);

void drawDiffTab(DiffViewState& state, const std::vector<Session>& sessions);

}  // namespace shardscope::ui
