#include "app/job_summary.h"

#include <cstdio>

#include "engine/run_controller.h"
#include "engine/run_summary.h"
#include "trace/profiler_trace.h"
#include "trace/rank_event_files.h"

namespace shardscope::app {

int writeJobSummary(const std::string& dir, const std::string& summaryPath) {
  if (!trace::isDirectory(dir)) {
    std::fprintf(stderr, "shardscope: error: view --summary reads a job's --trace-dir, and '%s' is not a directory; "
                 "a run's own summary comes from 'shardscope run --summary FILE'.\n", dir.c_str());
    return 2;
  }
  auto loaded = trace::isProfilerTraceDirectory(dir) ? trace::loadProfilerTraces(dir) : trace::loadRankEventFiles(dir);
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "shardscope: error: %s\n", loaded.error.c_str());
    return 2;
  }
  if (!loaded.note.empty()) std::fprintf(stderr, "shardscope: %s: %s", dir.c_str(), loaded.note.c_str());
  if (!loaded.clocks.empty()) std::fprintf(stderr, "shardscope: %s: clocks: %s", dir.c_str(), loaded.clocks.c_str());
  RunResult result;
  result.ok = !loaded.ranksFailed;
  result.error = loaded.note;
  result.worldSize = loaded.recording.ranks();
  result.rankPlacements = loaded.rankPlacements;
  result.deviceDescription = loaded.device;
  result.parameterCount = loaded.parameterCount;
  result.clocks = loaded.rankClocks;
  if (!loaded.jobLabel.empty()) result.source = "torch.profiler";
  // Every rank reports the global mean loss; rank 0's steps are the job's. torch.profiler records
  // no loss: its steps are counted per rank (recorded_steps), with no loss to list.
  if (loaded.recording.ranks() > 0 && !trace::isProfilerTraceDirectory(dir)) {
    for (const auto& step : loaded.recording.rank(0).steps) result.losses.push_back(step.loss);
  }
  if (auto error = writeSummaryFile(summaryPath, loaded.config, result, loaded.recording)) {
    std::fprintf(stderr, "shardscope: error: %s\n", error->c_str());
    return 2;
  }
  const size_t steps = loaded.recording.ranks() > 0 ? loaded.recording.rank(0).steps.size() : 0;
  std::printf("shardscope view: the summary of the job in %s (%d ranks, %zu steps) written to %s\n", dir.c_str(),
              result.worldSize, steps, summaryPath.c_str());
  return 0;
}

}  // namespace shardscope::app
