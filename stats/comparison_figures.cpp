#include "stats/comparison_figures.h"

#include <algorithm>
#include <functional>

#include "config/strategies.h"
#include "trace/run_recording.h"

namespace shardscope::stats {

namespace {

double maxOver(const std::vector<RankStats>& ranks, const std::function<double(const RankStats&)>& figure) {
  double m = 0;
  for (const auto& r : ranks) m = std::max(m, figure(r));
  return m;
}

ComparisonFigures figuresOf(const std::vector<RankStats>& ranks) {
  ComparisonFigures f;
  f.recorded = anyRecorded(ranks);
  f.stepTimed = anyStepTimed(ranks);
  f.stepRecorded = anyStepRecorded(ranks);
  f.throughputKnown = ranks.empty() || ranks.front().throughputKnown;
  f.stepSeconds = maxOver(ranks, [](const RankStats& r) { return r.steadyStepSeconds; });
  for (const auto& r : ranks) f.samplesPerSecond += r.samplesPerSecond;
  if (!ranks.empty()) {  // rank 0's collectives are the ones shown
    const double steps = std::max(ranks.front().recordedSteps, 1);
    const auto all = trace::allCollectives(ranks.front().collectives);
    f.sentBytesPerStep = static_cast<double>(all.sentBytes) / steps;
    f.collectives = all;
    f.collectiveSecondsPerStep = all.seconds / steps;
  }
  f.exposedCommSeconds = maxOver(ranks, [](const RankStats& r) { return r.steadyExposedCommSeconds; });
  f.overlapPercent = maxOver(ranks, [](const RankStats& r) { return r.overlapPercent; });
  f.recomputeSecondsPerStep = maxOver(ranks, [](const RankStats& r) { return r.recomputeSecondsPerStep; });
  return f;
}

bool canBeBaseline(const ComparedRun& run, const ComparisonFigures& figures) {
  return run.strategy == config::baselineStrategy().kind && !run.isJob && run.ok && figures.recorded &&
         figures.sentBytesPerStep > 0 && figures.collectives.unsized == 0;
}

}  // namespace

std::vector<ComparisonFigures> comparisonFigures(const std::vector<ComparedRun>& runs) {
  std::vector<ComparisonFigures> out;
  for (const auto& run : runs) out.push_back(run.ranks ? figuresOf(*run.ranks) : ComparisonFigures{});
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].ok || !out[i].recorded || out[i].collectives.unsized > 0) continue;  // no ratio to a part
    for (size_t j = 0; j < runs.size(); ++j) {
      if (runs[j].world != runs[i].world || !canBeBaseline(runs[j], out[j])) continue;
      out[i].baseline = static_cast<int>(j);
      out[i].sentRatioToBaseline = out[i].sentBytesPerStep / out[j].sentBytesPerStep;
      break;
    }
  }
  return out;
}

std::string sentPerStepText(const ComparisonFigures& figures) {
  return trace::formatCollectiveBytes(figures.collectives, static_cast<int64_t>(figures.sentBytesPerStep), 1);
}

std::string perStepFigureMissing(const ComparisonFigures& figures, bool brief) {
  if (!figures.recorded) return "not recorded";
  if (!figures.stepRecorded) return brief ? "unknown" : "unknown (no steps recorded)";
  return "";
}

std::string perStepFigureMissing(const std::vector<RankStats>& ranks, bool brief) {
  ComparisonFigures figures;
  figures.recorded = anyRecorded(ranks);
  figures.stepRecorded = anyStepRecorded(ranks);
  return perStepFigureMissing(figures, brief);
}

}  // namespace shardscope::stats
