#include "engine/run_summary.h"

#include <fstream>
#include <stdexcept>

#include "engine/run_controller.h"

namespace shardscope {

nlohmann::json summaryJson(const RunConfig& config, const RunResult& result) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t s = 0; s < result.losses.size(); ++s) {
    steps.push_back({{"step", s}, {"loss", result.losses[s]}});
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < result.stepSeconds.size(); ++r) {
    ranks.push_back({{"rank", r}, {"step_time_s", result.stepSeconds[r]}});
  }
  nlohmann::json j = {{"schema", "shardscope.summary/1"},
                      {"status", result.ok ? "ok" : "failed"},
                      {"config", config.toJson()},
                      {"zero_stage", zeroName(config.strategy)},
                      {"device", result.deviceDescription},
                      {"parameter_count", result.parameterCount},
                      {"world_size", result.worldSize},
                      {"steps", steps},
                      {"ranks", ranks}};
  if (!result.ok) j["error"] = result.error;
  return j;
}

void writeSummaryFile(const std::string& path, const RunConfig& config, const RunResult& result) {
  std::ofstream out(path);
  out << summaryJson(config, result).dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write summary '" + path + "'");
}

}  // namespace shardscope
