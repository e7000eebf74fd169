// How long a window's recording holds the controller when it folds its older steps to stay within
// its budget of events (RunRecording::keepDetailWithin): the app adds events under its lock, so a
// fold is a pause in draining the ranks' pipes, and a long one overflows their queues (256k events
// each). Feeds a synthetic FSDP-like run, step by step on every rank as the controller merges it,
// and reports the longest and median add() that folded, and the events held at the end.
//   build/bench/fold_pause_bench [budget_events=24000000] [ranks=2] [steps=3000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trace/run_recording.h"

namespace {

using namespace shardscope::trace;

// One step of one rank: per unit an all-gather, a compute span with activation samples, a reshard;
// forward then backward. About 170 events a unit.
struct StepWriter {
  int rank = 0;
  int ranks = 2;
  int units = 8;
  int64_t t = 1'000'000;
  std::vector<Event> out;

  void memory(MemoryRole role, int64_t bytes, int32_t unit = kNoUnit) {
    Event e;
    e.kind = EventKind::Memory;
    e.rank = rank;
    e.beginNs = t += 500;
    e.role = static_cast<uint8_t>(role);
    e.bytes = bytes;
    e.unit = unit;
    out.push_back(e);
  }
  void span(EventKind kind, uint8_t op, int step, Phase phase, int64_t length, int unit) {
    Event e;
    e.kind = kind;
    e.rank = rank;
    e.op = op;
    e.step = step;
    e.phase = static_cast<uint8_t>(phase);
    e.issueNs = e.beginNs = t;
    e.endNs = t += length;
    e.bytes = 1 << 20;
    e.bytesOut = 2 << 20;
    e.worldSize = ranks;
    e.text = "blocks." + std::to_string(unit);
    out.push_back(e);
  }
  const std::vector<Event>& step(int s) {
    out.clear();
    const int64_t begin = t;
    for (int phase = 0; phase < 2; ++phase) {
      const Phase p = phase == 0 ? Phase::Forward : Phase::Backward;
      for (int u = 0; u < units; ++u) {
        memory(MemoryRole::ParamGathered, 4 << 20, u);
        span(EventKind::Collective, static_cast<uint8_t>(CollectiveOp::AllGather), s, p, 20'000, u);
        const int64_t computeBegin = t;
        for (int k = 0; k < 80; ++k) memory(MemoryRole::Activation, phase == 0 ? 4096 : -4096);
        t = computeBegin;
        span(EventKind::Compute, static_cast<uint8_t>(phase == 0 ? ComputeKind::Forward : ComputeKind::Backward), s, p,
             80 * 500, u);
        memory(MemoryRole::ParamGathered, -(4 << 20), u);
      }
    }
    Event end;
    end.kind = EventKind::StepEnd;
    end.rank = rank;
    end.step = s;
    end.beginNs = begin;
    end.endNs = t += 1'000;
    out.push_back(end);
    return out;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const size_t budget = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 24'000'000;
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 2;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 3000;
  RunRecording recording(ranks);
  size_t spilledEvents = 0;
  recording.keepDetailWithin(budget / static_cast<size_t>(ranks), [&](int, RankTimeline&& older) {
    spilledEvents += older.memory.size() + older.compute.size() + older.collectives.size();
  });
  std::vector<StepWriter> writers(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    writers[static_cast<size_t>(r)].rank = r;
    writers[static_cast<size_t>(r)].ranks = ranks;
  }
  std::vector<double> foldMs;
  size_t added = 0;
  for (int s = 0; s < steps; ++s) {
    for (auto& w : writers) {
      for (const Event& e : w.step(s)) {
        const int foldedBefore = recording.rank(e.rank).folded.steps;
        const auto start = std::chrono::steady_clock::now();
        recording.add(e);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (recording.rank(e.rank).folded.steps != foldedBefore) foldMs.push_back(ms);
        ++added;
      }
    }
  }
  size_t held = 0;
  for (int r = 0; r < ranks; ++r) held += recording.detailEvents(r);
  std::sort(foldMs.begin(), foldMs.end());
  std::printf("%zu events added over %d ranks, budget %zu: %zu held at the end, %zu spilled\n", added, ranks, budget,
              held, spilledEvents);
  if (foldMs.empty()) {
    std::printf("no fold (the run is within the budget)\n");
    return 0;
  }
  std::printf("%zu folds: median %.2f ms, p90 %.2f ms, longest %.2f ms\n", foldMs.size(), foldMs[foldMs.size() / 2],
              foldMs[foldMs.size() * 9 / 10], foldMs.back());
  return 0;
}
