// The --summary JSON of a run (schema: docs/summary-schema.md).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "trace/run_recording.h"

namespace shardscope {

struct RunResult;

// `recording`: what the run recorded (its RunResult's, or the sink it was given: run_controller.h).
nlohmann::json summaryJson(const RunConfig& config, const RunResult& result, const trace::RunRecording& recording);
// Writes it atomically (files/output_file.h); nothing on success, else the failure in one line.
std::optional<std::string> writeSummaryFile(const std::string& path, const RunConfig& config, const RunResult& result,
                                            const trace::RunRecording& recording);

}  // namespace shardscope
