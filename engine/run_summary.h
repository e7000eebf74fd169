// The --summary JSON of a run (schema: docs/summary-schema.md).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trace/run_config.h"

namespace shardscope {

struct RunResult;

nlohmann::json summaryJson(const RunConfig& config, const RunResult& result);
// Writes it atomically (trace/output_file.h); nothing on success, else the failure in one line.
std::optional<std::string> writeSummaryFile(const std::string& path, const RunConfig& config, const RunResult& result);

}  // namespace shardscope
