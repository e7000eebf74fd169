#include "estimate/memory_preflight.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "estimate/run_prediction.h"
#include "trace/format.h"

namespace shardscope::estimate {

std::optional<std::string> memoryShortfall(const config::RunConfig& config, const HostMemory& host) {
  if (config.memoryCheck == config::MemoryCheck::Off || config.device != config::DeviceKind::Cpu ||
      host.availableBytes < 0)
    return std::nullopt;
  const RunPrediction p = predictRun(config);
  const int64_t perRank = p.modelStateBytes() + p.activationSavedBytes;
  const int64_t all = perRank * config.world;
  if (all <= host.availableBytes) return std::nullopt;
  std::ostringstream why;
  why << "this run needs at least " << trace::formatBytes(static_cast<double>(perRank)) << " per rank by shardscope's "
      << "estimate (model states " << trace::formatBytes(static_cast<double>(p.modelStateBytes()))
      << (p.activationSavedBytes > 0
              ? " + saved activations " + trace::formatBytes(static_cast<double>(p.activationSavedBytes))
              : std::string())
      << "), " << trace::formatBytes(static_cast<double>(all)) << " for " << config.world << " ranks on this host, and "
      << trace::formatBytes(static_cast<double>(host.availableBytes)) << " is free (" << host.source
      << "). Make the model smaller (--layers " << config.layers << ", --hidden " << config.hidden
      << "), shard it (--strategy full_shard), or, if the estimate is wrong for this run, pass --memory-check off.";
  return why.str();
}

std::optional<std::string> checkMemoryAvailable(const config::RunConfig& config) {
  return memoryShortfall(config, hostMemoryAvailable());
}

}  // namespace shardscope::estimate
