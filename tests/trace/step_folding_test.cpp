// A recording that keeps only its last steps in detail (RunRecording::keepLastSteps) gives every
// figure the summary reads exactly as one that keeps everything, and the pieces it hands out
// (spilled) plus what it keeps make the same Chrome trace.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trace/chrome_trace.h"
#include "trace/perfetto_reader.h"
#include "trace/trace_reader.h"
#include "trace/perfetto_trace.h"
#include "trace/run_recording.h"

namespace shardscope::trace {
namespace {

constexpr int kRanks = 2;
constexpr int kSteps = 23;
constexpr int kUnits = 3;

Event make(EventKind kind, int rank, int step, int64_t begin, int64_t end = 0) {
  Event e;
  e.kind = kind;
  e.rank = rank;
  e.step = step;
  e.beginNs = begin;
  e.endNs = end;
  return e;
}

Event memory(int rank, int64_t t, MemoryRole role, int64_t bytes, int32_t unit) {
  Event e = make(EventKind::Memory, rank, -1, t);
  e.role = static_cast<uint8_t>(role);
  e.bytes = bytes;
  e.unit = unit;
  return e;
}

// --offload cpu's host memory: its own lane and its own per-unit tracks, folded like the device's.
Event hostMemory(int rank, int64_t t, MemoryRole role, int64_t bytes, int32_t unit) {
  Event e = memory(rank, t, role, bytes, unit);
  e.space = static_cast<uint8_t>(MemorySpace::Host);
  return e;
}

Event compute(int rank, int step, ComputeKind kind, Phase phase, int64_t begin, int64_t end, int unit) {
  Event e = make(EventKind::Compute, rank, step, begin, end);
  e.op = static_cast<uint8_t>(kind);
  e.phase = static_cast<uint8_t>(phase);
  e.text = unitName(unit);
  return e;
}

Event collective(int rank, int step, CollectiveOp op, ProcessGroup group, int64_t begin, int64_t end, int64_t bytes) {
  Event e = make(EventKind::Collective, rank, step, begin, end);
  e.issueNs = begin;
  e.op = static_cast<uint8_t>(op);
  e.processGroup = static_cast<uint8_t>(group);
  e.worldSize = 2;
  e.bytes = bytes;
  e.bytesOut = op == CollectiveOp::AllGather ? 2 * bytes : bytes;
  e.text = "blocks.0";
  return e;
}

// One rank's run: a broadcast before the first step, then steps of 1000 ns with an all-gather,
// forward and backward per unit (recomputing one, with the step's own activation sizes), a
// reduce-scatter and an all-reduce that compute partly hides, the optimizer, a step-gate pause in
// some, and memory for each unit, on the device and (shards, gradient shards) on the host. Varied
// per step so no two steps' figures are alike.
std::vector<Event> rankEvents(int rank) {
  std::vector<Event> out;
  out.push_back(collective(rank, -1, CollectiveOp::Broadcast, ProcessGroup::World, 10, 40, 64));
  for (int u = 0; u < kUnits; ++u) out.push_back(hostMemory(rank, 50 + u, MemoryRole::ParamShard, 300 + u, u));
  for (int s = 0; s < kSteps; ++s) {
    const int64_t base = 100 + 1000 * s;
    Event group = make(EventKind::Group, rank, s, base, s % 5 == 2 ? base + 7 : base);
    group.op = static_cast<uint8_t>(GroupKind::StepStart);
    group.text = "step";
    out.push_back(group);
    int64_t t = base + 10;
    for (int u = 0; u < kUnits; ++u) {
      out.push_back(collective(rank, s, CollectiveOp::AllGather, ProcessGroup::Shard, t, t + 30 + s, 100 + u));
      out.push_back(memory(rank, t + 1, MemoryRole::ParamGathered, 200, u));
      out.push_back(compute(rank, s, ComputeKind::Forward, Phase::Forward, t + 20, t + 60, u));
      out.push_back(memory(rank, t + 30, MemoryRole::Activation, 50 + 3 * s + u, u));
      out.push_back(memory(rank, t + 61, MemoryRole::ParamGathered, -200, u));
      t += 70;
    }
    for (int u = kUnits - 1; u >= 0; --u) {
      if (u == 1) out.push_back(compute(rank, s, ComputeKind::Forward, Phase::Backward, t, t + 15, u));
      out.push_back(compute(rank, s, ComputeKind::Backward, Phase::Backward, t + 16, t + 70, u));
      out.push_back(memory(rank, t + 40, MemoryRole::GradFull, 40, u));
      out.push_back(memory(rank, t + 69, MemoryRole::Activation, -(50 + 3 * s + u), u));
      out.push_back(collective(rank, s, CollectiveOp::ReduceScatter, ProcessGroup::Shard, t + 60, t + 95 + s % 4, 40));
      out.push_back(memory(rank, t + 96, MemoryRole::GradFull, -40, u));
      out.push_back(hostMemory(rank, t + 97, MemoryRole::GradShard, 40 + s, u));
      t += 100;
    }
    out.push_back(collective(rank, s, CollectiveOp::AllReduce, ProcessGroup::Replicate, t, t + 20, 8));
    out.push_back(compute(rank, s, ComputeKind::Optimizer, Phase::Optimizer, t + 25, t + 60, -1));
    out.push_back(memory(rank, t + 30, MemoryRole::OptimizerState, s == 0 ? 500 : 0, kNoUnit));
    for (int u = 0; u < kUnits; ++u) out.push_back(hostMemory(rank, t + 62, MemoryRole::GradShard, -(40 + s), u));
    out.push_back(compute(rank, s, ComputeKind::Step, Phase::None, base, t + 70, -1));
    Event end = make(EventKind::StepEnd, rank, s, base, t + 70);
    end.pausedNs = s % 5 == 2 ? 7 : 0;
    end.loss = 1.0 / (s + 1);
    out.push_back(end);
  }
  return out;
}

// Both ranks' events merged by time, as the controller's StreamMerger hands them over.
std::vector<Event> runEvents() {
  std::vector<Event> all;
  for (int r = 0; r < kRanks; ++r) {
    auto events = rankEvents(r);
    all.insert(all.end(), events.begin(), events.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return all;
}

std::vector<std::string> sortedTraceEvents(const std::string& text) {
  std::vector<std::string> out;
  const auto trace = nlohmann::json::parse(text);
  for (const auto& e : trace["traceEvents"]) out.push_back(e.dump());
  std::sort(out.begin(), out.end());
  return out;
}

// Every figure the summary reads, the same from a folding recording as from the whole one.
void expectTheWholeRunsFigures(const RunRecording& folding, const RunRecording& whole, int r) {
  SCOPED_TRACE("rank " + std::to_string(r));
  const auto& kept = folding.rank(r);
  EXPECT_EQ(kept.folded.steps + static_cast<int>(kept.steps.size()), kSteps);
  EXPECT_EQ(kept.memoryTotals.size(), kept.memory.size()) << "the views' index covers the detail kept";
  EXPECT_EQ(kept.computeBegins.size(), kept.compute.size());

  EXPECT_EQ(folding.stepSeconds(r), whole.stepSeconds(r));
  const auto exposedWhole = whole.commFigures(r).exposedCommSeconds;
  const auto exposedFolded = folding.commFigures(r).exposedCommSeconds;
  ASSERT_EQ(exposedFolded.size(), exposedWhole.size());
  for (size_t s = 0; s < exposedWhole.size(); ++s) EXPECT_NEAR(exposedFolded[s], exposedWhole[s], 1e-15) << s;
  EXPECT_DOUBLE_EQ(folding.commFigures(r).overlapPercent, whole.commFigures(r).overlapPercent);
  for (int steps : {-1, kSteps, kSteps - 1}) {
    const auto a = folding.collectiveTotals(r, steps);
    const auto b = whole.collectiveTotals(r, steps);
    for (int op = 0; op < kCollectiveOpCount; ++op) {
      EXPECT_EQ(a[op].count, b[op].count) << op << " over " << steps;
      EXPECT_EQ(a[op].sizeBytes, b[op].sizeBytes) << op;
      EXPECT_EQ(a[op].sentBytes, b[op].sentBytes) << op;
      EXPECT_NEAR(a[op].seconds, b[op].seconds, 1e-15) << op;
    }
  }
  EXPECT_EQ(folding.sentBytesByGroup(r, kSteps), whole.sentBytesByGroup(r, kSteps));
  EXPECT_EQ(folding.recomputeNs(r, kSteps), whole.recomputeNs(r, kSteps));
  EXPECT_GT(whole.recomputeNs(r, kSteps), 0);
  EXPECT_EQ(folding.activationSavedBytes(r), whole.activationSavedBytes(r));
  EXPECT_EQ(whole.activationSavedBytes(r), 3 * (50 + 3 * (kSteps - 1)) + 3) << "the last step saves the most";
  EXPECT_EQ(kept.peakTotal, whole.rank(r).peakTotal);
  EXPECT_EQ(kept.peakByRole, whole.rank(r).peakByRole);
  EXPECT_EQ(kept.memory.last(), whole.rank(r).memory.last());
  EXPECT_EQ(kept.host.peakTotal, whole.rank(r).host.peakTotal);
  EXPECT_EQ(kept.host.memory.last(), whole.rank(r).host.memory.last());
  EXPECT_EQ(kept.host.totals.size(), kept.host.memory.size());
  const int64_t end = kept.steps.back().endNs;
  for (int u = 0; u < kUnits; ++u) {
    EXPECT_EQ(folding.unitMemoryAt(r, u, end, MemorySpace::Host), whole.unitMemoryAt(r, u, end, MemorySpace::Host));
  }
  EXPECT_EQ(whole.rank(r).host.peakTotal, 3 * 300 + 3 + 3 * (40 + kSteps - 1)) << "the last step's gradients";
}

std::vector<std::string> sortedLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

// Feeds the run to a whole recording and to `folding` (set up by `keep` to spill into a trace
// writer), checks the figures, and that the pieces spilled plus the rest make the whole's trace.
// Returns how many pieces were spilled.
int foldAndCompare(const std::function<void(RunRecording&, RunRecording::Spill)>& keep, RunRecording& folding,
                   RunRecording& whole) {
  std::ostringstream streamed, streamedCsv;
  ChromeTraceWriter writer(streamed, nlohmann::json::object(), kRanks);
  writeMemoryCsvHeader(streamedCsv);
  int spills = 0;
  keep(folding, [&](int rank, const RankTimeline& older) {
    writer.write(rank, older, folding.originNs());
    writeMemoryCsvRows(streamedCsv, rank, older, folding.originNs());
    ++spills;
  });
  for (const auto& e : runEvents()) {
    whole.add(e);
    folding.add(e);
  }
  for (int r = 0; r < kRanks; ++r) expectTheWholeRunsFigures(folding, whole, r);
  for (int r = 0; r < kRanks; ++r) {
    writer.write(r, folding.rank(r), folding.originNs());
    writeMemoryCsvRows(streamedCsv, r, folding.rank(r), folding.originNs());
  }
  writer.finish();
  std::ostringstream wholeCsv;
  writeMemoryCsv(wholeCsv, whole);
  EXPECT_TRUE(sortedLines(streamedCsv.str()) == sortedLines(wholeCsv.str()))
      << "the memory CSV's pieces, host rows too, make the whole's";
  std::ostringstream full;
  writeChromeTrace(full, whole, nlohmann::json::object());
  const auto a = sortedTraceEvents(streamed.str());
  const auto b = sortedTraceEvents(full.str());
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b) << "the streamed pieces and the whole recording write the same events";
  return spills;
}

TEST(StepFolding, KeepsTheLastStepsAndEveryFigureOfTheWholeRun) {
  RunRecording whole(kRanks), folding(kRanks);
  const int spills = foldAndCompare(
      [](RunRecording& rec, RunRecording::Spill spill) { rec.keepLastSteps(4, std::move(spill)); }, folding, whole);
  EXPECT_GE(spills, 2 * kRanks) << "23 steps keeping 4 fold at least twice per rank";
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_GE(folding.rank(r).steps.size(), 4u);
    EXPECT_LT(folding.rank(r).steps.size(), 8u);
    EXPECT_LT(folding.rank(r).memory.size(), whole.rank(r).memory.size() / 2);
  }
}

// A window's recording folds by size: its oldest sixteenth of steps (one step at least) once a rank
// holds more events than its budget, so what it shows stays within it (a step's events over it at most).
TEST(StepFolding, AWindowsRecordingStaysWithinItsBudgetOfEvents) {
  RunRecording whole(kRanks), folding(kRanks);
  constexpr size_t kBudget = 200;  // about 4 steps of this run
  const int spills = foldAndCompare(
      [](RunRecording& rec, RunRecording::Spill spill) { rec.keepDetailWithin(kBudget, std::move(spill)); }, folding,
      whole);
  EXPECT_GE(spills, 2 * kRanks);
  const size_t perStep = whole.detailEvents(0) / kSteps;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_LE(folding.detailEvents(r), kBudget + perStep) << "rank " << r;
    EXPECT_GT(folding.detailEvents(r), kBudget / 2) << "most of the budget stays in view";
    EXPECT_EQ(folding.rank(r).steps.front().step, folding.rank(0).steps.front().step)
        << "every rank folded through the same step: the views' k-th group is one moment";
  }
}

// A recording read from a trace learns its ranks as it reads: its budget is over them all, each
// rank holding its share, and it folds as a window's does.
TEST(StepFolding, ABudgetOverTheRanksGivesEachItsShare) {
  RunRecording whole(kRanks), folding(kRanks);
  constexpr size_t kBudget = 200;
  foldAndCompare([](RunRecording& rec,
                    RunRecording::Spill spill) { rec.keepDetailWithinOverRanks(kBudget * kRanks, std::move(spill)); },
                 folding, whole);
  const size_t perStep = whole.detailEvents(0) / kSteps;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_LE(folding.detailEvents(r), kBudget + perStep) << "rank " << r;
    EXPECT_GT(folding.rank(r).folded.steps, 0) << "rank " << r;
  }
}

// The run written to `path` as a run streams it: a piece of a few steps per rank as they fold,
// then the rest.
template <class Writer>
void writeAsARunStreamsIt(const std::string& path, const RunRecording& whole) {
  std::ofstream out(path, std::ios::binary);
  Writer writer(out, nlohmann::json::object(), kRanks);
  RunRecording streaming(kRanks);
  streaming.keepLastSteps(4, [&](int r, RankTimeline&& older) { writer.write(r, older, whole.originNs()); });
  for (const auto& e : runEvents()) streaming.add(e);
  for (int r = 0; r < kRanks; ++r) writer.write(r, streaming.rank(r), whole.originNs());
  writer.finish(RunFacts{});
}

// A trace read within a budget (`bounded`) against the same read whole (`all`) and the run.
void expectTheBudgetFoldedNoFigure(const LoadedTrace& all, const LoadedTrace& bounded, const RunRecording& whole) {
  ASSERT_TRUE(all.error.empty()) << all.error;
  ASSERT_TRUE(bounded.error.empty()) << bounded.error;
  for (int r = 0; r < kRanks; ++r) {
    const auto& kept = bounded.recording.rank(r);
    EXPECT_GT(kept.folded.steps, 0) << "rank " << r << ": " << kept.steps.size() << " steps in detail";
    // Within the budget, and a written piece's steps over it at the most (its events come lane by lane).
    EXPECT_LE(bounded.recording.detailEvents(r), 200 + 8 * all.recording.detailEvents(r) / kSteps) << "rank " << r;
    EXPECT_EQ(all.recording.rank(r).folded.steps, 0) << "without a budget, all in detail";
    expectTheWholeRunsFigures(bounded.recording, all.recording, r);
    std::vector<double> losses = kept.folded.losses;
    for (const auto& s : kept.steps) losses.push_back(s.loss);
    std::vector<double> wholeLosses;
    for (const auto& s : whole.rank(r).steps) wholeLosses.push_back(s.loss);
    EXPECT_EQ(losses, wholeLosses) << "every step's loss, folded or kept, as the run recorded it";
  }
}

std::string tempTrace(const char* extension) {
  return (std::filesystem::temp_directory_path() / ("step_folding_" + std::to_string(::getpid()) + extension)).string();
}

// A run's .pftrace opened with a budget (the window's --window-events, a summary's): read with its
// older steps folded, every figure and every step's loss the whole run's, as the same trace read
// whole gives them.
TEST(StepFolding, APerfettoTraceReadWithinABudgetHasTheWholeRunsFigures) {
  RunRecording whole(kRanks);
  for (const auto& e : runEvents()) whole.add(e);
  const std::string path = tempTrace(".pftrace");
  writeAsARunStreamsIt<PerfettoTraceWriter>(path, whole);
  const auto all = loadPerfettoTrace(path);
  const auto bounded = loadPerfettoTrace(path, 200 * kRanks);
  std::filesystem::remove(path);
  expectTheBudgetFoldedNoFigure(all, bounded, whole);
}

// The same of a run's Chrome JSON trace (--trace FILE.json): streamed as .pftrace is, each rank's
// stretch of events put in time order, its older steps folded within the budget.
TEST(StepFolding, AChromeJsonTraceReadWithinABudgetHasTheWholeRunsFigures) {
  RunRecording whole(kRanks);
  for (const auto& e : runEvents()) whole.add(e);
  const std::string path = tempTrace(".json");
  writeAsARunStreamsIt<ChromeTraceWriter>(path, whole);
  const auto all = loadChromeTrace(path);
  const auto bounded = loadChromeTrace(path, 200 * kRanks);
  std::filesystem::remove(path);
  expectTheBudgetFoldedNoFigure(all, bounded, whole);
}

TEST(StepFolding, KeepingEverythingIsTheDefault) {
  RunRecording rec(kRanks);
  for (const auto& e : runEvents()) rec.add(e);
  EXPECT_EQ(rec.rank(0).steps.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(rec.rank(0).folded.steps, 0);
}

}  // namespace
}  // namespace shardscope::trace
