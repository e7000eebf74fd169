// One line for where a run's ranks ran, from each rank's own placement ("cpu / gloo / cores 1"):
// the leading parts all ranks share said once, the rest per rank, so no rank's cores or GPU pass
// for all.
#pragma once

#include <string>
#include <vector>

namespace shardscope::trace {

// {"cpu / gloo / cores 0", "cpu / gloo / cores 1"} -> "cpu / gloo / rank 0: cores 0; rank 1: cores 1";
// one placement when every rank reported the same. A rank that has not reported (empty: not yet,
// or it failed first) is named as such: {"cpu / gloo", ""} -> "rank 0: cpu / gloo; rank 1: not
// reported". Nothing reported -> "".
std::string describeRankPlacements(const std::vector<std::string>& placements);

// How a GPU rank's placement says that ranks share its GPU: "cuda:0, 2 ranks on one GPU (method)".
std::string ranksOnOneGpuClause(int ranks, const std::string& method);
// That clause, found in a placement or a device line ("" where none is): "2 ranks on one GPU (method)".
std::string ranksOnOneGpuIn(const std::string& placement);

}  // namespace shardscope::trace
