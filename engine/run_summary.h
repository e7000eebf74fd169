// The --summary JSON of a run (schema: docs/summary-schema.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trace/run_config.h"

namespace shardscope {

struct RunResult;

nlohmann::json summaryJson(const RunConfig& config, const RunResult& result);
void writeSummaryFile(const std::string& path, const RunConfig& config, const RunResult& result);

}  // namespace shardscope
