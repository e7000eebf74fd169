// The comparison tab's figure bars as data: each bar's value and label per session, formatted from
// the figures stats/comparison_figures.h computes once (compare's table prints the same ones).
// ui/panels.cpp draws them.
#pragma once

#include <string>
#include <vector>

#include "stats/comparison_figures.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct FigureBar {
  std::string title;
  std::vector<double> values;       // per session; 0 where the figure is not known (an empty bar)
  std::vector<std::string> labels;  // per session: the figure, or why there is none
  unsigned color = 0;               // ImU32
  std::string note;                 // drawn under the bars; "" for none
};

// The sessions as stats/ compares them.
std::vector<stats::ComparedRun> comparedRuns(const std::vector<Session>& sessions,
                                             const std::vector<std::vector<stats::RankStats>>& stats);

// Step time, throughput, bytes sent (with the ratio to the baseline), time in collectives, overlap.
std::vector<FigureBar> figureBars(const std::vector<Session>& sessions,
                                  const std::vector<std::vector<stats::RankStats>>& stats);

}  // namespace shardscope::ui
