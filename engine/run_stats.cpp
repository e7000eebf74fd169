#include "engine/run_stats.h"

#include <numeric>

#include "engine/run_controller.h"

namespace shardscope {

std::vector<RankStats> computeRankStats(const RunConfig& config, const RunResult& result) {
  std::vector<RankStats> out;
  const auto& rec = result.recording;
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    RankStats s;
    s.rank = r;
    s.peakByRole = t.peakByRole;
    s.peakTotal = t.peakTotal;
    s.atPeakTotal = t.atPeakTotal;
    s.stepSeconds = r < static_cast<int>(result.stepSeconds.size()) ? result.stepSeconds[r]
                                                                    : std::vector<double>{};
    if (!s.stepSeconds.empty()) {
      const size_t first = s.stepSeconds.size() > 1 ? 1 : 0;
      s.steadyStepSeconds =
          std::accumulate(s.stepSeconds.begin() + first, s.stepSeconds.end(), 0.0) /
          static_cast<double>(s.stepSeconds.size() - first);
    }
    if (s.steadyStepSeconds > 0) {
      const double samples = static_cast<double>(config.batch) / result.worldSize;
      s.samplesPerSecond = samples / s.steadyStepSeconds;
      const double items = config.model == "gpt" ? samples * config.seq : samples;
      if (config.model == "gpt") s.tokensPerSecond = items / s.steadyStepSeconds;
      s.modelFlopsPerSecond =
          6.0 * static_cast<double>(result.parameterCount) * items / s.steadyStepSeconds;
    }
    // Per-step figures divide by completed steps, so only their collectives count.
    s.collectives = rec.collectiveTotals(r, static_cast<int>(s.stepSeconds.size()));
    s.overlapPercent = rec.overlapPercent(r);
    s.droppedEvents = t.dropped;
    out.push_back(s);
  }
  return out;
}

}  // namespace shardscope
