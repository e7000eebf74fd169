#include "ui/figure_bars.h"

#include <functional>

#include "config/strategies.h"
#include "trace/format.h"

namespace shardscope::ui {

namespace {

constexpr unsigned rgb(unsigned r, unsigned g, unsigned b) { return 0xFF000000u | (b << 16) | (g << 8) | r; }

// One bar per session: `value` its length, `label` its text (for a figure that is known).
FigureBar bar(const char* title, unsigned color, const std::vector<stats::ComparisonFigures>& figures,
              const std::function<double(const stats::ComparisonFigures&)>& value,
              const std::function<std::string(const stats::ComparisonFigures&)>& label) {
  FigureBar b{title, {}, {}, color, ""};
  for (const auto& f : figures) {
    b.values.push_back(value(f));
    b.labels.push_back(label(f));
  }
  return b;
}

// A per-step figure's bar: empty, labelled with why, where the session has none (a step that
// never completed holds nothing to measure).
FigureBar perStepBar(const char* title, unsigned color, const std::vector<stats::ComparisonFigures>& figures,
                     const std::function<double(const stats::ComparisonFigures&)>& value,
                     const std::function<std::string(const stats::ComparisonFigures&)>& label) {
  return bar(
      title, color, figures,
      [&](const stats::ComparisonFigures& f) { return stats::perStepFigureMissing(f).empty() ? value(f) : 0.0; },
      [&](const stats::ComparisonFigures& f) {
        const std::string missing = stats::perStepFigureMissing(f, /*brief=*/true);
        return missing.empty() ? label(f) : missing;
      });
}

FigureBar sentBar(const std::vector<stats::ComparisonFigures>& figures, bool jobOps) {
  const char* baseline = config::baselineStrategy().name;
  FigureBar b = perStepBar(
      "Bytes a rank sends per step under the ring schedule (rank 0, all collectives)", rgb(245, 133, 24), figures,
      [](const stats::ComparisonFigures& f) { return f.sentBytesPerStep; },
      [&](const stats::ComparisonFigures& f) {
        const std::string bytes = stats::sentPerStepText(f);
        return f.baseline < 0 ? bytes : bytes + " (" + trace::formatRatio(f.sentRatioToBaseline) + " " + baseline + ")";
      });
  b.note = std::string("all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size") +
           (jobOps ? "; all-to-all all but its own part, a send its message" : "") +
           ": the bytes the rank puts on the wire, not the collectives' sizes (the table has both)";
  return b;
}

}  // namespace

std::vector<stats::ComparedRun> comparedRuns(const std::vector<Session>& sessions,
                                             const std::vector<std::vector<stats::RankStats>>& stats) {
  std::vector<stats::ComparedRun> runs;
  for (size_t i = 0; i < sessions.size() && i < stats.size(); ++i) {
    const auto& s = sessions[i];
    runs.push_back(
        {s.config.strategy, s.config.world, !s.jobLabel.empty(), s.status != SessionStatus::Failed, &stats[i]});
  }
  return runs;
}

std::vector<FigureBar> figureBars(const std::vector<Session>& sessions,
                                  const std::vector<std::vector<stats::RankStats>>& stats) {
  const auto figures = stats::comparisonFigures(comparedRuns(sessions, stats));
  std::vector<FigureBar> bars;
  bars.push_back(bar(
      "Step time (slowest rank)", rgb(90, 140, 200), figures,
      [](const stats::ComparisonFigures& f) { return f.stepTimed ? f.stepSeconds : 0.0; },
      [](const stats::ComparisonFigures& f) {
        return f.stepTimed ? trace::formatMilliseconds(f.stepSeconds) : "unknown";
      }));
  const auto throughputKnown = [](const stats::ComparisonFigures& f) { return f.stepTimed && f.throughputKnown; };
  bars.push_back(bar(
      "Throughput, samples/s (all ranks)", rgb(84, 162, 75), figures,
      [&](const stats::ComparisonFigures& f) { return throughputKnown(f) ? f.samplesPerSecond : 0.0; },
      [&](const stats::ComparisonFigures& f) {
        return throughputKnown(f) ? trace::formatRate(f.samplesPerSecond, "") : std::string("unknown");
      }));
  // A PyTorch job's all-to-all, send or recv: more ops shown than the three a strategy issues.
  bars.push_back(sentBar(figures, stats::collectiveOpsShown(stats).size() > 3));
  bars.push_back(perStepBar(
      "Time in collectives per step (rank 0)", rgb(114, 183, 178), figures,
      [](const stats::ComparisonFigures& f) { return f.collectiveSecondsPerStep; },
      [](const stats::ComparisonFigures& f) { return trace::formatMilliseconds(f.collectiveSecondsPerStep); }));
  bars.push_back(perStepBar(
      "Comm/compute overlap", rgb(178, 121, 162), figures,
      [](const stats::ComparisonFigures& f) { return f.overlapPercent; },
      [](const stats::ComparisonFigures& f) { return trace::formatPercent(f.overlapPercent); }));
  return bars;
}

}  // namespace shardscope::ui
