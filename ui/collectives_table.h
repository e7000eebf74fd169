// "Last collectives": each rank's last collectives side by side, one column per rank and one row
// per sequence number of a process group, so that where a hung job's ranks stopped agreeing lines
// up across the columns. The first mismatch (stats/first_mismatch.h) is named above the table, its
// row marked and the odd ranks' cells in red; a rank missing from a row is an empty, red cell.
// Drawn from a session's collective logs (Flight Recorder dumps).
#pragma once

#include <vector>

#include "ui/session_store.h"

namespace shardscope::ui {

// The rows drawn at most per group: the last ones, and from a little before the first mismatch.
constexpr size_t kShownCollectiveRows = 40;

// Draws every session that has collective logs, or says where they come from when none has.
void drawLastCollectives(const std::vector<Session>& sessions);

}  // namespace shardscope::ui
