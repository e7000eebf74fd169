// The --summary JSON of a run (schema: docs/summary-schema.md).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "trace/run_recording.h"
#include "trace/trace_writer.h"

namespace shardscope::engine {

struct RunResult;

// How it ended, as the summary's "status" says: failed or interrupted when not ok; incomplete when
// its recording dropped events or lost steps it trained; else ok.
trace::RunStatus runStatusOf(const RunResult& result, const trace::RunRecording& recording);
// Of the steps it trained, those its record does not hold (a reopened trace's); 0 where not known.
int64_t stepsLostOf(const RunResult& result);

// `recording`: what the run recorded (its RunResult's, or the sink it was given: run_controller.h).
nlohmann::json summaryJson(const config::RunConfig& config, const RunResult& result,
                           const trace::RunRecording& recording);
// Writes it atomically (files/output_file.h); nothing on success, else the failure in one line.
std::optional<std::string> writeSummaryFile(const std::string& path, const config::RunConfig& config,
                                            const RunResult& result, const trace::RunRecording& recording);

}  // namespace shardscope::engine
