#include "estimate/scaling_table.h"

#include <algorithm>

#include "config/strategies.h"
#include "estimate/run_prediction.h"
#include "trace/format.h"

namespace shardscope::estimate {

using trace::formatBytes;
using trace::MemoryRole;

void printScalingTable(std::FILE* out, const std::vector<stats::StrategyColumn>& columns) {
  std::fprintf(out,
               "\nPer-rank memory against the world size N, on the same global batch (the largest rank, "
               "measured;\nmodel states: the roles the estimator predicts, measured as it predicts them, beside "
               "its PREDICTION)\n");
  std::fprintf(out, "%-14s %4s %12s %13s %13s %12s %12s %12s\n", "strategy", "N", "peak total", "model states",
               "predicted", "activation", "comm_buffer", "other");
  std::vector<config::StrategyKind> strategies;
  for (const auto& c : columns) {
    if (std::find(strategies.begin(), strategies.end(), c.config.strategy) == strategies.end()) {
      strategies.push_back(c.config.strategy);
    }
  }
  const auto largest = [](const std::vector<stats::RankStats>& ranks) {
    const stats::RankStats* best = nullptr;
    for (const auto& r : ranks) {
      if (!best || r.peakTotal > best->peakTotal) best = &r;
    }
    return best;
  };
  for (config::StrategyKind strategy : strategies) {
    for (const auto& c : columns) {
      if (c.config.strategy != strategy) continue;
      const stats::RankStats* r = largest(c.ranks);
      const auto prediction = predictRun(c.config);
      const auto predicted = prediction.modelStateBytes();
      if (!c.ok || !r || !stats::anyRecorded(c.ranks)) {
        std::fprintf(out, "%-14s %4d %12s %13s %13s\n", config::strategyName(strategy), c.config.world,
                     c.ok ? "not recorded" : "failed", "-", formatBytes(static_cast<double>(predicted)).c_str());
        continue;
      }
      // The roles the estimator predicts, each as it predicts it (its peak, or what stays after a step).
      int64_t states = 0;
      for (const auto& m : prediction.memory) {
        if (!m.host) states += stats::measuredRoleBytes(*r, m.role, m.when == When::AfterStep, false);
      }
      const auto role = [&](MemoryRole m) {
        return formatBytes(static_cast<double>(r->peakByRole[static_cast<int>(m)]));
      };
      std::fprintf(out, "%-14s %4d %12s %13s %13s %12s %12s %12s\n", config::strategyName(strategy), c.config.world,
                   formatBytes(static_cast<double>(r->peakTotal)).c_str(),
                   formatBytes(static_cast<double>(states)).c_str(),
                   formatBytes(static_cast<double>(predicted)).c_str(), role(MemoryRole::Activation).c_str(),
                   role(MemoryRole::CommBuffer).c_str(), role(MemoryRole::Other).c_str());
    }
  }
  std::fprintf(out,
               "Model states shrink with N for the sharded strategies (as the seeds say: 1/N); activations\n"
               "shrink only because each rank's share of the batch does, and gathered units and buffers\n"
               "do not shrink at all.\n");
}

}  // namespace shardscope::estimate
