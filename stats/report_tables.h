// The tables `shardscope run` and `shardscope compare` print at the end: what the runs measured.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "stats/run_stats.h"

namespace shardscope::stats {

// Per rank: peak memory by role, then time, throughput, collectives and overlap.
// `device`: rank 0's GPU as it reported itself, for headroom and MFU where no figure is stated.
void printRunTables(std::FILE* out, const config::RunConfig& config, const std::vector<RankStats>& ranks,
                    const DeviceFacts& device = {});

struct StrategyColumn {
  std::string strategy;  // the column's name: the strategy, or "strategy@N" across world sizes
  config::RunConfig config;
  DeviceFacts device;
  std::vector<RankStats> ranks;
  bool ok = true;
  std::string error;
};

// One row per figure, one column per strategy (memory: the largest rank; time: the slowest rank).
void printComparisonTable(std::FILE* out, const std::vector<StrategyColumn>& columns);

}  // namespace shardscope::stats
