// `shardscope view DIR --summary FILE`: a launched job's figures from its per-rank files (worker
// --trace-dir, or listen's) or its torch.profiler traces (a directory, or the files), written as
// run's --summary writes a run's, with each rank's clock against rank 0's as the merge applied it.
#pragma once

#include <string>
#include <vector>

namespace shardscope::app {

// Each line of `lines` on stderr after "shardscope: ".
void printTerminalNotes(const std::string& lines);

// Writes the summary; 0, 3 when the record says its run's recording lost events or steps (its
// status "incomplete"), or 2 with the reason on stderr.
int writeJobSummary(const std::vector<std::string>& paths, const std::string& summaryPath);

}  // namespace shardscope::app
