// compare --worlds's last table: what the runs measured against what the estimator predicts.
#pragma once

#include <cstdio>
#include <vector>

#include "stats/report_tables.h"

namespace shardscope::estimate {

// Per strategy, one row per world size: the largest rank's peak by role, and its model states
// measured (the roles the estimator predicts, each as it predicts it) beside the estimator's
// PREDICTION of them.
void printScalingTable(std::FILE* out, const std::vector<stats::StrategyColumn>& columns);

}  // namespace shardscope::estimate
