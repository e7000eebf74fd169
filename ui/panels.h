// The panels around the timelines: the run configuration with Run / Stop / Compare, the memory
// breakdown at the cursor and at the peak, and the comparison table and bar charts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "ui/session_store.h"
#include "ui/timeline_view.h"

namespace shardscope::ui {

// What Compare runs: these strategies, at the panel's world size or at each of `worlds`
// ("1,2,4"; empty: the panel's), on one global batch.
struct CompareChoice {
  std::vector<config::StrategyKind> strategies = config::defaultCompareStrategies();
  char worlds[32] = "";
};

// The runs Compare would start, or why it cannot: a bad world list, or the first run validate()
// refuses.
std::optional<std::string> compareRunsOf(const config::RunConfig& config, const CompareChoice& choice,
                                         std::vector<config::RunConfig>& runs);

// Edits `config` and what Compare runs; returns what the user pressed. `problem` disables Run and
// Compare, `compareProblem` Compare only.
enum class ConfigAction { None, Run, Compare, Stop };
ConfigAction drawConfigPanel(config::RunConfig& config, CompareChoice& compare, bool busy, const std::string& problem,
                             const std::string& compareProblem);

// The role legend; each role's checkbox shows or hides it in the memory lanes.
void drawRoleLegend(bool (&showRole)[trace::kMemoryRoleCount]);

// Bars by role for every rank of `session`: at the cursor (when valid) and at each rank's peak (a
// summary's session: at its peak only, as the summary kept it).
void drawMemoryBreakdown(const Session& session, const TimelineCursor& cursor);

// Per-rank figures of every session (the saved ones of a summary, or derived from the recording).
std::vector<std::vector<stats::RankStats>> sessionStats(const std::vector<Session>& sessions);

// Strategies side by side: a table of the figures and bar charts of peak memory by role.
void drawComparison(const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats);

}  // namespace shardscope::ui
