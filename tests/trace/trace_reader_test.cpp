// A trace is read event by event as it is parsed; what depends on the file's order (memory
// counters become deltas against the rank's previous sample) is refused, with a message, when
// the order is not the one shardscope writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

#include "tests/support/run_cli.h"
#include "trace/chrome_trace.h"
#include "trace/perfetto_reader.h"
#include "trace/ring_schedule.h"
#include "trace/trace_files.h"
#include "trace/trace_reader.h"
#include "trace/wire.h"

namespace shardscope::trace {
namespace {

std::string writeTrace(const std::string& name, const std::string& events) {
  const std::string path = testing::freshTempDir("trace_reader") + "/" + name;
  std::ofstream(path) << R"({"otherData": {"strategy": "full_shard"}, "traceEvents": [)" << events << "]}";
  return path;
}

TEST(TraceReader, ReadsEventsInTheOrderShardscopeStreamsThem) {
  // Rank 1's names, then a piece of rank 0, one of rank 1, and rank 0's next piece.
  const auto path = writeTrace("pieces.json", R"(
    {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "rank 1"}},
    {"ph": "X", "cat": "compute", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"kind": "step", "step": 0}},
    {"ph": "C", "pid": 0, "name": "memory", "ts": 1, "args": {"activation": 100}},
    {"ph": "C", "pid": 1, "name": "memory", "ts": 2, "args": {"activation": 50}},
    {"ph": "X", "cat": "compute", "pid": 0, "tid": 1, "ts": 20, "dur": 10, "args": {"kind": "step", "step": 1}},
    {"ph": "C", "pid": 0, "name": "memory", "ts": 21, "args": {"activation": 300}})");
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.ranks(), 2);
  EXPECT_EQ(loaded.config.world, 2);
  EXPECT_EQ(loaded.config.strategy, config::StrategyKind::FullShard);
  EXPECT_EQ(loaded.recording.rank(0).steps.size(), 2u);
  EXPECT_EQ(loaded.recording.rank(0).peakTotal, 300);
  EXPECT_EQ(loaded.recording.rank(1).peakTotal, 50);
}

TEST(TraceReader, MemorySamplesOutOfTimeOrderAreRefusedByName) {
  const auto path = writeTrace("backwards.json", R"(
    {"ph": "C", "pid": 3, "name": "memory", "ts": 10, "args": {"activation": 100}},
    {"ph": "C", "pid": 3, "name": "memory", "ts": 5, "args": {"activation": 50}})");
  const auto loaded = loadChromeTrace(path);
  EXPECT_NE(loaded.error.find("memory samples of rank 3 out of time order (event 2 at 5 us"), std::string::npos)
      << loaded.error;
}

// A memory figure past anything a device or host holds is a damaged file's (a fuzzer's -2^63, say):
// refused by name, in the JSON and the Perfetto reader alike, where summing it overflowed.
TEST(TraceReader, AMemoryCounterPastAPetabyteIsRefusedByName) {
  const auto path = writeTrace("huge.json", R"(
    {"ph": "C", "pid": 1, "name": "memory", "ts": 10, "args": {"activation": 100}},
    {"ph": "C", "pid": 1, "name": "memory", "ts": 20, "args": {"activation": -9223372036854775808}})");
  const auto loaded = loadChromeTrace(path);
  EXPECT_NE(loaded.error.find("a memory counter of -9223372036854775808 bytes for rank 1's activation (event 2)"),
            std::string::npos)
      << loaded.error;
  const auto unit = writeTrace("huge_unit.json", R"(
    {"ph": "C", "pid": 0, "name": "unit memory blocks.0", "ts": 10, "args": {"param_gathered": 1125899906842625}})");
  EXPECT_NE(loadChromeTrace(unit).error.find("a lane holds 0 to 1 PiB"), std::string::npos)
      << loadChromeTrace(unit).error;
}

// A time past 2^62 ns either way (a fuzzed -2^63, a begin and a duration whose sum passes it) is a
// damaged file's: refused by name before it is converted or summed into a span's end, where it
// overflowed (UBSan, run_recording.cpp).
TEST(TraceReader, ATimePastTwoToTheSixtyTwoNanosecondsIsRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"ph": "X", "cat": "compute", "pid": 0, "ts": -9223372036854775808, "dur": 10, "args": {"kind": "step"}})",
       "has a time of -9223372036854775808 us in its event 2 (\"ts\")"},
      {R"({"ph": "X", "cat": "compute", "pid": 0, "ts": 20, "dur": 1e300, "args": {"kind": "step"}})",
       "has a time of 1e+300 us in its event 2 (\"dur\")"},
      {R"({"ph": "X", "cat": "compute", "pid": 0, "ts": 4e15, "dur": 4e15, "args": {"kind": "step"}})",
       "has a time of 8e+15 us in its event 2 (\"ts\" + \"dur\")"},
      {R"({"ph": "X", "cat": "comm", "pid": 0, "ts": 20, "dur": 5, "args": {"op": "all_gather", "issue_us": -5e18}})",
       "(\"args.issue_us\")"},
      {R"({"ph": "C", "pid": 0, "name": "memory", "ts": 9e18, "args": {"activation": 100}})", "(\"ts\")"}};
  for (const auto& [event, expected] : cases) {
    const auto path = writeTrace("far.json", R"({"ph": "X", "cat": "compute", "pid": 0, "ts": 0, "dur": 10, "args":)"
                                             R"( {"kind": "step", "step": 0}}, )" +
                                                 event);
    const auto loaded = loadChromeTrace(path);
    EXPECT_NE(loaded.error.find(expected), std::string::npos) << event << ": " << loaded.error;
    EXPECT_NE(loaded.error.find("lie within 2^62 ns (146 years) of its clock's zero"), std::string::npos)
        << loaded.error;
  }
  // At the edge of the range, a span still opens.
  const auto path = writeTrace("edge.json", R"({"ph": "X", "cat": "compute", "pid": 0, "ts": 4.6e15, "dur": 10,)"
                                            R"( "args": {"kind": "step", "step": 0}})");
  EXPECT_TRUE(loadChromeTrace(path).error.empty()) << loadChromeTrace(path).error;
}

// An event missing a field it needs (a span's time, a counter's values) is a malformed event,
// named as one: reading a missing field of a const JSON object was undefined behaviour (found by
// the loaders' fuzz test under AddressSanitizer).
TEST(TraceReader, AnEventMissingAFieldItNeedsIsRefused) {
  for (const char* event : {R"({"ph": "X", "cat": "compute", "pid": 0, "dur": 10, "args": {"kind": "step"}})",
                            R"({"ph": "X", "cat": "compute", "pid": 0, "ts": 0, "dur": 10})",
                            R"({"ph": "C", "pid": 0, "name": "memory", "ts": 1})",
                            R"({"ph": "C", "pid": 0, "name": "unit memory blocks.0", "ts": 1})"}) {
    const auto loaded = loadChromeTrace(writeTrace("missing.json", event));
    EXPECT_NE(loaded.error.find("has a malformed event: in its event 1"), std::string::npos)
        << event << ": " << loaded.error;
  }
}

// What the ranks reported of themselves (their GPU's memory, the peak rank 0 measured, the model's
// size, each rank's placement) is written after the events, as it is known only once the ranks are
// up, and read back, so a GPU run's trace opens with its capacity line and MFU.
TEST(TraceReader, ReadsBackWhatTheRanksReportedOfThemselves) {
  RunRecording recording;
  recording.reset(2);
  for (int rank : {0, 1}) {
    Event step;
    step.kind = EventKind::StepEnd;
    step.rank = rank;
    step.beginNs = 1000;
    step.endNs = 2000;
    recording.add(step);
  }
  RunFacts facts;
  facts.parameterCount = 1341624320;
  facts.deviceMemoryBytes = 150'754'820'096;
  facts.measuredPeakFlops = 8.095e14;
  facts.rankPlacements = {"cuda:0 / nccl / cuda:0", "cuda:0 / nccl / cuda:0, shared"};
  const std::string path = testing::freshTempDir("trace_reader") + "/facts.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, recording, {{"strategy", "ddp"}, {"device", "cuda"}}, facts);
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.parameterCount, facts.parameterCount);
  EXPECT_EQ(loaded.deviceMemoryBytes, facts.deviceMemoryBytes);
  EXPECT_DOUBLE_EQ(loaded.measuredPeakFlops, facts.measuredPeakFlops);
  EXPECT_EQ(loaded.rankPlacements, facts.rankPlacements);
  EXPECT_NE(loaded.device.find("cuda:0 / nccl"), std::string::npos) << loaded.device;

  // A trace from before they were kept, or with values no run reports, reads as "not known".
  const auto old = loadChromeTrace(writeTrace("old.json", ""));
  EXPECT_EQ(old.deviceMemoryBytes, 0);
  EXPECT_EQ(old.parameterCount, 0);
  const auto odd = runFactsOf({{"device_memory_bytes", -5},
                               {"measured_peak_flops", 1e300},
                               {"parameter_count", "many"},
                               {"rank_placements", {"cpu", 3}}});
  EXPECT_EQ(odd.deviceMemoryBytes, 0);
  EXPECT_EQ(odd.measuredPeakFlops, 0);
  EXPECT_EQ(odd.parameterCount, 0);
  EXPECT_EQ(odd.rankPlacements, (std::vector<std::string>{"cpu", ""}));
}

// A memory event of `bytes` (negative: freed) in `role` and `space` at time `t`.
Event memoryEvent(int64_t t, MemoryRole role, int64_t bytes, MemorySpace space) {
  Event e;
  e.kind = EventKind::Memory;
  e.beginNs = t;
  e.role = static_cast<uint8_t>(role);
  e.bytes = bytes;
  e.space = static_cast<uint8_t>(space);
  return e;
}

// --offload cpu: a rank's host memory is a lane of its own, beside the device's, through the wire
// format, a recording and a trace written and read back; the device's figures do not include it.
TEST(TraceReader, HostMemoryKeepsItsOwnLaneThroughAWrittenTrace) {
  RunRecording recording(1);
  auto memory = [&](int64_t t, MemoryRole role, int64_t bytes, MemorySpace space) {
    const Event e = memoryEvent(t, role, bytes, space);
    const std::string line = encodeEventLine(e);
    const auto back = decodeEventLine(line.substr(0, line.size() - 1));
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(back->space, e.space) << line;
    recording.add(*back);
  };
  memory(1000, MemoryRole::ParamShard, 400, MemorySpace::Host);
  memory(2000, MemoryRole::ParamGathered, 1600, MemorySpace::Device);
  memory(3000, MemoryRole::OptimizerState, 800, MemorySpace::Host);
  memory(4000, MemoryRole::ParamGathered, -1600, MemorySpace::Device);
  memory(5000, MemoryRole::OptimizerState, -300, MemorySpace::Host);
  auto check = [](const RankTimeline& t) {
    EXPECT_EQ(t.peakTotal, 1600);  // the device's alone
    EXPECT_EQ(t.host.peakTotal, 1200);
    EXPECT_EQ(t.host.peakByRole[static_cast<int>(MemoryRole::OptimizerState)], 800);
    EXPECT_EQ(t.host.memory.last()[static_cast<int>(MemoryRole::ParamShard)], 400);
    EXPECT_EQ(t.host.memory.last()[static_cast<int>(MemoryRole::OptimizerState)], 500);
    EXPECT_EQ(t.peakByRole[static_cast<int>(MemoryRole::OptimizerState)], 0);
  };
  check(recording.rank(0));
  const std::string path = testing::freshTempDir("trace_reader") + "/offload.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, recording, {{"strategy", "full_shard"}});
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  check(loaded.recording.rank(0));
  EXPECT_EQ(loaded.recording.rank(0).host.memory.size(), 3u);
}

// Every kind of compute span, the newest (pin_host_memory) too, goes through the wire and a written
// trace as the kind it was, with its unit and times, and marks the rank as having offload spans
// only for the copies and the pinning.
TEST(TraceReader, EveryComputeKindThroughTheWireAndAWrittenTrace) {
  RunRecording recording(1);
  for (int k = 0; k < kComputeKindCount; ++k) {
    Event e;
    e.kind = EventKind::Compute;
    e.op = static_cast<uint8_t>(k);
    e.beginNs = 1000 * (k + 1);
    e.endNs = e.beginNs + 500;
    e.text = "blocks." + std::to_string(k);
    const std::string line = encodeEventLine(e);
    const auto back = decodeEventLine(line.substr(0, line.size() - 1));
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(back->op, e.op) << line;
    recording.add(*back);
  }
  const std::string path = testing::freshTempDir("trace_reader") + "/kinds.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, recording, {{"strategy", "full_shard"}});
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& compute = loaded.recording.rank(0).compute;
  std::vector<int> kinds;
  for (const auto& e : compute) {
    kinds.push_back(e.op);
    EXPECT_EQ(e.text(), "blocks." + std::to_string(e.op));
    EXPECT_EQ(e.endNs - e.beginNs, 500);
    EXPECT_EQ(isOffloadSpan(e), e.op >= static_cast<uint8_t>(ComputeKind::CopyToDevice))
        << computeKindName(static_cast<ComputeKind>(e.op));
  }
  std::sort(kinds.begin(), kinds.end());
  std::vector<int> all(kComputeKindCount);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(kinds, all);
  EXPECT_TRUE(loaded.recording.rank(0).offloadSpans);
}

// Every collective op, those only a PyTorch job's trace has (all-to-all, send, recv) too, goes
// through the wire and a written trace as the op it was, with its sizes and what the rank sends and receives:
// an all-to-all with uneven splits keeps its own part, one with even splits stays (N-1)/N.
TEST(TraceReader, EveryCollectiveOpThroughAWrittenTrace) {
  RunRecording recording(1);
  auto collective = [](int op, int64_t begin, int64_t ownPart) {
    Event e;
    e.kind = EventKind::Collective;
    e.op = static_cast<uint8_t>(op);
    e.step = 0;
    e.beginNs = e.issueNs = begin;
    e.endNs = begin + 500;
    e.bytes = 4096;
    e.bytesOut = op == static_cast<int>(CollectiveOp::AllGather) ? 8192 : 6144;
    e.worldSize = 4;
    if (isPointToPoint(static_cast<CollectiveOp>(op))) e.peer = static_cast<int32_t>(ownPart);
    if (op == static_cast<int>(CollectiveOp::AllToAll)) e.ownPartBytes = ownPart;
    e.text = "blocks.0";
    return e;
  };
  // Through the wire first, as a rank's events reach the controller.
  auto viaWire = [](const Event& e) {
    const std::string line = encodeEventLine(e);
    const auto back = decodeEventLine(line.substr(0, line.size() - 1));
    EXPECT_TRUE(back.has_value()) << line;
    return back.value_or(e);
  };
  // A send's and a recv's peer (rank 3), and an all-to-all's own part.
  for (int k = 0; k < kCollectiveOpCount; ++k) {
    recording.add(viaWire(collective(k, 1000 * (k + 1), isPointToPoint(static_cast<CollectiveOp>(k)) ? 3 : -1)));
  }
  recording.add(viaWire(collective(static_cast<int>(CollectiveOp::AllToAll), 20000, 1024)));
  const std::string path = testing::freshTempDir("trace_reader") + "/collectives.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, recording, {{"strategy", "full_shard"}});
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& before = recording.rank(0).collectives;
  const auto& after = loaded.recording.rank(0).collectives;
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    SCOPED_TRACE(collectiveOpName(static_cast<CollectiveOp>(before[i].op)));
    EXPECT_EQ(after[i].op, before[i].op);
    EXPECT_EQ(after[i].bytes, before[i].bytes);
    EXPECT_EQ(after[i].bytesOut, before[i].bytesOut);
    if (isPointToPoint(static_cast<CollectiveOp>(after[i].op))) EXPECT_EQ(after[i].peer, 3) << "the peer";
    EXPECT_EQ(collectiveTraffic(after[i]).sentBytes, collectiveTraffic(before[i]).sentBytes);
    EXPECT_EQ(collectiveTraffic(after[i]).receivedBytes, collectiveTraffic(before[i]).receivedBytes);
  }
  const auto& uneven = after.back();
  EXPECT_EQ(collectiveTraffic(uneven).sentBytes, 4096 - 1024) << "its input less the part it keeps";
  EXPECT_EQ(collectiveTraffic(uneven).receivedBytes, 6144 - 1024);
  const auto& even = after[static_cast<size_t>(CollectiveOp::AllToAll)];
  EXPECT_EQ(collectiveTraffic(even).sentBytes, 3072) << "3/4 of its input among 4 ranks";
  EXPECT_EQ(collectiveTraffic(even).receivedBytes, 4608) << "3/4 of its output";
  EXPECT_EQ(collectiveTraffic(after[static_cast<size_t>(CollectiveOp::Send)]).receivedBytes, 0);
  EXPECT_EQ(collectiveTraffic(after[static_cast<size_t>(CollectiveOp::Recv)]).sentBytes, 0);
}

// --offload cpu's host memory per model unit ("who holds what" draws it under the device's row):
// a pinned shard and gradient made for their unit, and optimizer state made in no unit and then
// assigned to one (the totals unchanged), kept through a written trace.
TEST(TraceReader, HostMemoryPerUnitThroughAWrittenTrace) {
  RunRecording recording(1);
  auto add = [&](Event e, int32_t unit, uint8_t fromRole = kNoRole) {
    e.unit = unit;
    e.fromRole = fromRole;
    recording.add(e);
  };
  const auto state = static_cast<uint8_t>(MemoryRole::OptimizerState);
  add(memoryEvent(1000, MemoryRole::ParamShard, 400, MemorySpace::Host), 0);
  add(memoryEvent(1500, MemoryRole::ParamShard, 100, MemorySpace::Host), -1);
  add(memoryEvent(2000, MemoryRole::ParamGathered, 1600, MemorySpace::Device), 0);
  add(memoryEvent(3000, MemoryRole::GradShard, 400, MemorySpace::Host), 0);
  add(memoryEvent(4000, MemoryRole::OptimizerState, 800, MemorySpace::Host), kNoUnit);
  add(memoryEvent(4500, MemoryRole::OptimizerState, 800, MemorySpace::Host), 0, state);  // assigned to blocks.0
  auto check = [](const RunRecording& r) {
    const RoleBytes late = r.unitMemoryAt(0, 0, 5000, MemorySpace::Host);
    EXPECT_EQ(late[static_cast<int>(MemoryRole::ParamShard)], 400);
    EXPECT_EQ(late[static_cast<int>(MemoryRole::GradShard)], 400);
    EXPECT_EQ(late[static_cast<int>(MemoryRole::OptimizerState)], 800);
    EXPECT_EQ(r.unitMemoryAt(0, 0, 3500, MemorySpace::Host)[static_cast<int>(MemoryRole::OptimizerState)], 0);
    EXPECT_EQ(r.unitMemoryAt(0, -1, 5000, MemorySpace::Host)[static_cast<int>(MemoryRole::ParamShard)], 100);
    // The device's unit track has the gathered weights alone; the host's total counts the state once.
    EXPECT_EQ(r.unitMemoryAt(0, 0, 5000)[static_cast<int>(MemoryRole::ParamShard)], 0);
    EXPECT_EQ(r.unitMemoryAt(0, 0, 5000)[static_cast<int>(MemoryRole::ParamGathered)], 1600);
    EXPECT_EQ(r.rank(0).host.peakTotal, 1700);
    EXPECT_EQ(r.recordedUnits(), (std::vector<int32_t>{-1, 0}));
  };
  check(recording);
  const std::string path = testing::freshTempDir("trace_reader") + "/offload_units.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, recording, {{"strategy", "full_shard"}});
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  check(loaded.recording);
}

// The memory CSV: the device's rows, then the host's, each saying its space, bytes per role after
// the event and their total.
// Three steps on each of two ranks, as a run records them: a step span and the step's end.
RunRecording threeStepsOnTwoRanks() {
  RunRecording recording(2);
  for (int step = 0; step < 3; ++step) {
    for (int rank : {0, 1}) {
      Event span;
      span.kind = EventKind::Compute;
      span.op = static_cast<uint8_t>(ComputeKind::Step);
      span.rank = rank;
      span.step = step;
      span.beginNs = 1000 + step * 1000;
      span.endNs = span.beginNs + 900;
      recording.add(span);
      Event end = span;
      end.kind = EventKind::StepEnd;
      end.loss = 2.0 - step * 0.1;
      recording.add(end);
    }
  }
  return recording;
}

LoadedTrace writtenAndRead(TraceFormat format, const RunRecording& recording, const RunFacts& facts,
                           const std::string& name) {
  const std::string path = testing::freshTempDir("run_end") + "/" + name;
  {
    std::ofstream out(path, std::ios::binary);
    trace::writeTrace(format, out, recording, {{"strategy", "ddp"}, {"steps", 5}}, facts);
  }
  return format == TraceFormat::Perfetto ? loadPerfettoTrace(path) : loadChromeTrace(path);
}

// How the run ended and what its recording lost travel at the trace's end, in both formats: a run
// that trained 5 steps and dropped events (two of its step spans with them) reopens as what it was,
// not as a complete 3-step run; a failed run's trace reopens failed, naming why.
TEST(TraceReader, TheRunsStatusDropsAndStepsTrainedComeBackInBothFormats) {
  const RunRecording recording = threeStepsOnTwoRanks();
  RunFacts incomplete;
  incomplete.status = RunStatus::Incomplete;
  incomplete.stepsTrained = 5;
  incomplete.droppedEvents = {717, 0};
  RunFacts failed;
  failed.status = RunStatus::Failed;
  failed.error = "rank 1 died of SIGKILL during step 4";
  failed.stepsTrained = 3;
  failed.droppedEvents = {0, 0};
  for (const auto& [format, name] :
       {std::pair{TraceFormat::ChromeJson, "t.json"}, {TraceFormat::Perfetto, "t.pftrace"}}) {
    SCOPED_TRACE(name);
    const auto loaded = writtenAndRead(format, recording, incomplete, name);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    EXPECT_EQ(loaded.runStatus, RunStatus::Incomplete);
    ASSERT_TRUE(loaded.stepsTrained.has_value());
    EXPECT_EQ(*loaded.stepsTrained, 5);
    ASSERT_EQ(loaded.recording.ranks(), 2);
    EXPECT_EQ(loaded.recording.rank(0).dropped, 717);
    EXPECT_EQ(loaded.recording.rank(1).dropped, 0);
    EXPECT_EQ(loaded.recording.rank(0).steps.size(), 3u);
    EXPECT_EQ(stepsLost(loaded), 2) << "5 trained, 3 held: counted as lost, not silently missing";
    const std::string text = incompleteRecordingText(loaded);
    EXPECT_NE(text.find("the run trained 5 steps, and the trace lost 2 of them"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 0: 717"), std::string::npos) << text;
    EXPECT_NE(loaderNotes("t", loaded).find("t: recording incomplete: the run trained 5"), std::string::npos);

    const auto failedRun = writtenAndRead(format, recording, failed, std::string("failed.") + name);
    ASSERT_TRUE(failedRun.error.empty()) << failedRun.error;
    EXPECT_EQ(failedRun.runStatus, RunStatus::Failed);
    EXPECT_EQ(failedRun.runError, failed.error);
    EXPECT_EQ(stepsLost(failedRun), 0);
    EXPECT_EQ(incompleteRecordingText(failedRun), "");
    EXPECT_NE(loaderNotes("t", failedRun).find("t: the run failed: rank 1 died of SIGKILL"), std::string::npos);

    // A trace written before these were kept (RunFacts{} writes none of them) reads as it did.
    const auto old = writtenAndRead(format, recording, RunFacts{}, std::string("old.") + name);
    ASSERT_TRUE(old.error.empty()) << old.error;
    EXPECT_EQ(old.runStatus, RunStatus::Unknown);
    EXPECT_FALSE(old.stepsTrained.has_value());
    EXPECT_EQ(droppedEvents(old.recording), 0);
    EXPECT_EQ(incompleteRecordingText(old), "");
    EXPECT_EQ(loaderNotes("t", old), "");
  }
  // Values no run writes read as "not said": a negative or fractional count, a status of another name.
  const auto odd = runFactsOf({{"status", "great"}, {"steps_trained", -1}, {"dropped_events", {3.5, "x", 4}}});
  EXPECT_EQ(odd.status, RunStatus::Unknown);
  EXPECT_FALSE(odd.stepsTrained.has_value());
  EXPECT_EQ(odd.droppedEvents, (std::vector<int64_t>{0, 0, 4}));
}

TEST(MemoryCsv, HostMemoryRowsFollowTheDevicesWithTheirSpace) {
  RunRecording recording(1);
  auto memory = [&](int64_t t, MemoryRole role, int64_t bytes, MemorySpace space) {
    recording.add(memoryEvent(t, role, bytes, space));
  };
  memory(1000, MemoryRole::ParamShard, 400, MemorySpace::Host);
  memory(2000, MemoryRole::ParamGathered, 1600, MemorySpace::Device);
  memory(3000, MemoryRole::OptimizerState, 800, MemorySpace::Host);
  std::ostringstream out;
  writeMemoryCsv(out, recording);
  std::istringstream in(out.str());
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.substr(header.size() - 12), ",total,space") << header;
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  // Times from the first event; roles in the header's order (param_shard, param_gathered, grad_shard,
  // grad_full, optimizer_state, activation, comm_buffer, other, allocator_cache, device_runtime).
  ASSERT_EQ(rows.size(), 3u) << out.str();
  EXPECT_EQ(rows[0], "0,1000,0,1600,0,0,0,0,0,0,0,0,1600,device");
  EXPECT_EQ(rows[1], "0,0,400,0,0,0,0,0,0,0,0,0,400,host");
  EXPECT_EQ(rows[2], "0,2000,400,0,0,0,800,0,0,0,0,0,1200,host");
}

}  // namespace
}  // namespace shardscope::trace
