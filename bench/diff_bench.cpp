// How long `shardscope diff A B` takes on two long recordings, by phase: each recording read
// through the one door (recordings/open_recording.h), its per-rank figures, then the diff itself
// (stats/run_diff.h), the median of `repeats`. Event counts are the retained events: memory
// samples (the host's too), compute spans, collectives and event groups, over every rank. The target (issue "Diff
// two runs") is under 1 s for two recordings of 1 million events each, reading included.
//   build/bench/diff_bench A.pftrace B.pftrace [repeats=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "recordings/open_recording.h"
#include "stats/run_diff.h"
#include "stats/run_stats.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

size_t eventsOf(const shardscope::trace::RunRecording& recording) {
  size_t events = 0;
  for (int r = 0; r < recording.ranks(); ++r) events += recording.detailEvents(r);
  return events;
}

// One side read and its figures computed, timed; false where it could not be read.
bool side(const std::string& path, shardscope::recordings::Recording& opened, shardscope::stats::DiffSide& out,
          double& readSeconds, double& figuresSeconds) {
  auto start = Clock::now();
  opened = shardscope::recordings::openRecording({path}, {shardscope::trace::kDefaultDetailEvents});
  readSeconds = secondsSince(start);
  if (!opened.error.empty() || opened.parts.empty() || !opened.parts.front().trace.recording.ranks()) {
    std::fprintf(stderr, "diff_bench: %s: %s\n", path.c_str(), opened.error.c_str());
    return false;
  }
  auto& trace = opened.parts.front().trace;
  start = Clock::now();
  out.name = path;
  out.config = trace.config;
  out.recording = &trace.recording;
  out.ranks = shardscope::stats::computeRankStats(out.config, trace.recording, trace.parameterCount);
  figuresSeconds = secondsSince(start);
  std::printf("%s: %zu events over %d ranks; read %.3f s, figures %.3f s\n", path.c_str(), eventsOf(trace.recording),
              trace.recording.ranks(), readSeconds, figuresSeconds);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: diff_bench A B [repeats=5]\n");
    return 2;
  }
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  shardscope::recordings::Recording openedA, openedB;
  shardscope::stats::DiffSide a, b;
  double readA = 0, readB = 0, figuresA = 0, figuresB = 0;
  if (!side(argv[1], openedA, a, readA, figuresA) || !side(argv[2], openedB, b, readB, figuresB)) return 1;
  std::vector<double> diffSeconds;
  shardscope::stats::RunDiff d;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    d = shardscope::stats::diffRuns(a, b);
    diffSeconds.push_back(secondsSince(start));
  }
  std::sort(diffSeconds.begin(), diffSeconds.end());
  const double diff = diffSeconds[diffSeconds.size() / 2];
  std::printf("diff: %.3f s (median of %d; %.3f to %.3f), %zu changes, %zu marks, verdict %s\n", diff, repeats,
              diffSeconds.front(), diffSeconds.back(), d.changes.size(), d.marks.size(),
              shardscope::stats::verdictName(d.verdict));
  std::printf("total: %.3f s (both read, both figures, one diff)\n", readA + readB + figuresA + figuresB + diff);
  return 0;
}
