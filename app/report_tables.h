// The tables `shardscope run` and `shardscope compare` print at the end.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "trace/run_stats.h"

namespace shardscope::app {

// Per rank: peak memory by role, then time, throughput, collectives and overlap.
void printRunTables(std::FILE* out, const RunConfig& config, const std::vector<RankStats>& ranks);

struct StrategyColumn {
  std::string strategy;
  std::vector<RankStats> ranks;
  bool ok = true;
  std::string error;
};

// One row per figure, one column per strategy (memory: the largest rank; time: the slowest rank).
void printComparisonTable(std::FILE* out, const std::vector<StrategyColumn>& columns);

}  // namespace shardscope::app
