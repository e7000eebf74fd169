// The figures sessions are compared by, computed once per session: compare's table on the
// terminal and the app's comparison tab format them and compute none of them.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "stats/run_stats.h"

namespace shardscope::stats {

// A session side by side with others: what it ran, and its ranks' figures.
struct ComparedRun {
  config::StrategyKind strategy = config::StrategyKind::Ddp;
  int world = 1;
  // A PyTorch job's: its strategy is only the closest to what it ran, so it is no baseline.
  bool isJob = false;
  bool ok = true;  // false: the run failed, and none of its figures stands
  const std::vector<RankStats>* ranks = nullptr;
};

struct ComparisonFigures {
  bool recorded = false;                // memory and collectives recorded (not --recording off)
  bool stepTimed = false;               // a completed step timed (--recording off times them too)
  bool stepRecorded = false;            // a completed step recorded: the per-step figures below mean something
  bool throughputKnown = false;         // a batch in the record (a PyTorch job's trace has none)
  double stepSeconds = 0;               // steady step, slowest rank
  double samplesPerSecond = 0;          // all ranks together
  double sentBytesPerStep = 0;          // rank 0, every collective, what it puts on the wire under the ring
  trace::CollectiveTotals collectives;  // rank 0's, every collective (their counts: how many had no size)
  double collectiveSecondsPerStep = 0;  // rank 0, every collective
  double exposedCommSeconds = 0;        // per step, the rank that waited longest
  double overlapPercent = 0;            // the rank that overlapped most
  double recomputeSecondsPerStep = 0;   // activation checkpointing's, the slowest rank
  // The ZeRO paper's comparison: sentBytesPerStep as a multiple of the baseline's (ddp at the same
  // world size, a run that recorded and sent something): the index of that run, -1 if none.
  int baseline = -1;
  double sentRatioToBaseline = 0;
};

std::vector<ComparisonFigures> comparisonFigures(const std::vector<ComparedRun>& runs);

// sentBytesPerStep as a table shows it: "size not recorded" where no collective had a recorded size
// (a PyTorch job's kernels known by their names alone), "(+N unsized)" after it where some had none.
std::string sentPerStepText(const ComparisonFigures& figures);

// Why a session's per-step figures are not known: "not recorded" (--recording off), "unknown (no
// steps recorded)" (CUDA memory snapshots on their own, a run stopped in its first step; "unknown"
// when `brief`); "" where they are.
std::string perStepFigureMissing(const ComparisonFigures& figures, bool brief = false);
std::string perStepFigureMissing(const std::vector<RankStats>& ranks, bool brief = false);

}  // namespace shardscope::stats
