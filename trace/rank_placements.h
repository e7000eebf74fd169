// One line for where a run's ranks ran, from each rank's own placement ("cpu / gloo / cores 1"):
// what they share said once, what differs said per rank, so no rank's cores or GPU pass for all.
#pragma once

#include <string>
#include <vector>

namespace shardscope::trace {

// {"cpu / gloo / cores 0", "cpu / gloo / cores 1"} -> "cpu / gloo / rank 0: cores 0, rank 1: cores 1";
// equal placements -> that placement; ranks not yet reported (empty) are left out.
std::string describeRankPlacements(const std::vector<std::string>& placements);

}  // namespace shardscope::trace
