// `shardscope view DIR --summary FILE`: a launched job's figures from its per-rank files
// (worker --trace-dir, or listen's), written as run's --summary writes a run's, with each rank's
// clock against rank 0's as the merge applied it.
#pragma once

#include <string>

namespace shardscope::app {

// Writes the summary; 0, or 2 with the reason on stderr.
int writeJobSummary(const std::string& dir, const std::string& summaryPath);

}  // namespace shardscope::app
