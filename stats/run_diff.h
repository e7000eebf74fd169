// Two runs diffed: "why is B worse than A". The runs are aligned by step (the steady steps, after
// a warm-up, that both recorded), then per rank: collectives by (op, group, unit, phase,
// micro-batch, order within the step), compute by (phase, unit), memory by role. Each figure is
// given as A, B, the change and the change's share (of A's step time for times, of the rank's peak
// for memory, of the bytes the rank's collectives moved per step for bytes), the largest first,
// each naming where it happens. A verdict on step time and peak memory says regression,
// improvement or no change, and never calls a step-time difference within two standard errors of
// the difference of the two runs' means (from their step-to-step spread, and from their batch
// means where consecutive steps slowed together) a regression. What cannot be aligned (other world
// sizes, strategies, events one run lacks) is said, not guessed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "stats/run_stats.h"
#include "trace/run_recording.h"

namespace shardscope::stats {

struct DiffSide {
  std::string name;  // how the report names it: its path
  config::RunConfig config;
  const trace::RunRecording* recording = nullptr;  // null: a summary's figures alone (no timeline)
  std::vector<RankStats> ranks;
};

enum class DiffUnit { Seconds, Bytes, Percent };

struct DiffChange {
  std::string figure;  // "step time", "peak memory", "reduce_scatter", "compute", ...
  std::string where;   // "rank 3, backward of blocks.7"; "" for the whole run
  int rank = -1;       // -1: the whole run
  DiffUnit unit = DiffUnit::Seconds;
  double a = 0, b = 0;  // per step (times; bytes moved), or at the peak (memory)
  double share = 0;     // (b - a) over A's step time (times), the rank's A peak (memory), the bytes its
                        // collectives moved per step in A (bytes moved), or 100 (percent points)
  std::string at;       // where it first happens in B's steps compared, as --at takes a time ("1234.500us" from
                        // B's start); "" for a figure of no one span
  // A collective's time: the part of it that no compute beside it hid, per step (A, B); -1 for
  // any other figure.
  double exposedA = -1, exposedB = -1;
};

// A collective of B whose change passed the gate (its time moved by the gate's share of A's step
// time, or its bytes moved at all: they are exact), at each of its occurrences in the steps
// compared: where a timeline marks it.
struct DiffMark {
  int rank = 0;
  int64_t beginNs = 0, endNs = 0;  // on B's clock (its events' own)
  bool worse = false;              // slower or larger
  std::string change;              // "+22.95 ms", "-512 B"
};

enum class Verdict { NoChange, Improvement, Regression };
const char* verdictName(Verdict verdict);  // "no change" | "improvement" | "regression"

struct RunDiff {
  int warmup = 1;
  int stepsCompared = 0;            // steps warmup .. warmup + stepsCompared - 1 of both
  double stepA = 0, stepB = 0;      // mean of the slowest rank's step time over them, seconds
  double spreadA = 0, spreadB = 0;  // their sample standard deviations
  // A difference of means the runs' own variation allows: two standard errors of it, each mean's
  // the larger of spread / sqrt(steps) and that of its batch means (consecutive steps slow together).
  double noise = 0;
  double peakA = 0, peakB = 0;      // the largest rank's peak, bytes
  std::vector<DiffChange> changes;  // by |share|, largest first
  std::vector<DiffMark> marks;      // by rank, then B's time
  std::vector<std::string> notes;   // what was not aligned, and why
  Verdict verdict = Verdict::NoChange;
  std::string reason;  // the verdict's why, with its figures
};

struct DiffOptions {
  double gate = 0.05;  // a change below this share of A's figure is no change
  int warmup = 1;      // steps left out at the start of each run
};

// A figure of a diff as the report writes it: a time, bytes or a percentage.
std::string diffValueText(DiffUnit unit, double value);
// A change as the report writes it: "+2.33 ms", "-386.5 KiB", "+5.4 points".
std::string diffChangeText(const DiffChange& change);

RunDiff diffRuns(const DiffSide& a, const DiffSide& b, const DiffOptions& options = {});

// The verdict alone, from the step times' means, spreads and counts and the peaks: shared by
// diffRuns and its tests.
Verdict judge(const RunDiff& d, double gate, std::string& reason);

}  // namespace shardscope::stats
