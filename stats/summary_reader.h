// Reads a summary written by `--summary` (one run, or a `compare`) back into per-rank figures, so a
// saved summary can be browsed in the app without its timeline.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "stats/run_stats.h"

namespace shardscope::stats {

struct SummaryRun {
  config::RunConfig config;
  std::string status;  // "ok" | "failed"
  std::string error;
  std::string device;
  std::vector<double> losses;
  std::vector<RankStats> ranks;
  std::string source;  // "torch.profiler" / "torch.cuda.memory": a PyTorch job's own records (its
                       // model and batch unknown)
  std::string title;   // such a job's session title, as its summary gives it ("": none)
};

struct LoadedSummary {
  std::vector<SummaryRun> runs;  // one, or one per strategy of a compare
  std::string error;             // set when the file is not a shardscope summary
};

LoadedSummary loadSummary(const std::string& path);

}  // namespace shardscope::stats
