// A recording written as Perfetto's protobuf trace (--trace FILE.pftrace) and read back is the same
// recording: every span with its figures, every event group, every memory sample; and the file is
// told by its content, not its name. (tests/perfetto_trace_decode.py decodes the same files with
// Perfetto's own schema.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/run_cli.h"
#include "trace/perfetto_reader.h"
#include "trace/trace_files.h"
#include "trace/trace_reader.h"
#include "trace/wire.h"

namespace shardscope::trace {
namespace {

// A real run's trace (Chrome JSON), with what a CPU run of shardscope's strategies never records
// added: an all-to-all, a send, a group's pause at the step gate, micro-batches, a sub-group.
RunRecording recordedRun(const std::string& dir) {
  const auto r = testing::runShardscope(testing::runArgsOf(testing::tinyGptConfig(), {"--trace", dir + "/t.json"}));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  auto loaded = loadChromeTrace(dir + "/t.json");
  EXPECT_TRUE(loaded.error.empty()) << loaded.error;
  RunRecording& rec = loaded.recording;
  const int64_t end = rec.rank(0).steps.back().endNs;
  Event a2a;
  a2a.kind = EventKind::Collective;
  a2a.rank = 1;
  a2a.op = static_cast<uint8_t>(CollectiveOp::AllToAll);
  a2a.beginNs = end + 10;
  a2a.endNs = end + 500;
  a2a.issueNs = end + 5;
  a2a.bytes = 4096;
  a2a.bytesOut = 2048;
  a2a.ownPartBytes = 1024;
  a2a.worldSize = 2;
  a2a.microBatch = 2;
  a2a.processGroup = static_cast<uint8_t>(ProcessGroup::Shard);
  a2a.text = collectiveText("blocks.1", "gloo:all_to_all", CollectiveOp::AllToAll);
  rec.add(a2a);
  Event send = a2a;
  send.op = static_cast<uint8_t>(CollectiveOp::Send);
  send.beginNs = end + 600;
  send.endNs = end + 700;
  send.ownPartBytes = 0;  // a send has none
  send.peer = 0;
  send.text = "blocks.1";
  rec.add(send);
  Event pause;
  pause.kind = EventKind::Group;
  pause.rank = 0;
  pause.op = static_cast<uint8_t>(GroupKind::Reshard);
  pause.beginNs = end + 20;
  pause.endNs = end + 90;
  pause.step = 7;
  pause.text = "reshard blocks.0";
  rec.add(pause);
  return std::move(loaded.recording);
}

// What a lane held after each time it has samples at: the JSON reader splits one sample that moved
// bytes between two roles in two, at one time; the protobuf reader keeps it one.
std::map<int64_t, RoleBytes> bytesByTime(const RoleTrack& track) {
  std::map<int64_t, RoleBytes> out;
  for (size_t k = 0; k < track.size(); ++k) out[track.time(k)] = track.bytes(k);
  return out;
}

template <class Span>
void expectSameSpans(const std::vector<Span>& spansA, const std::vector<Span>& spansB, const char* what) {
  ASSERT_EQ(spansA.size(), spansB.size()) << what;
  std::vector<Event> a, b;
  for (const auto& s : spansA) a.push_back(s.toEvent(0));
  for (const auto& s : spansB) b.push_back(s.toEvent(0));
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(std::string(what) + " " + std::to_string(i));
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].op, b[i].op);
    EXPECT_EQ(a[i].phase, b[i].phase);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].microBatch, b[i].microBatch);
    EXPECT_EQ(a[i].beginNs, b[i].beginNs);
    EXPECT_EQ(a[i].endNs, b[i].endNs);
    EXPECT_EQ(a[i].text, b[i].text);
    if (a[i].kind == EventKind::Collective) {
      EXPECT_EQ(a[i].bytes, b[i].bytes);
      EXPECT_EQ(a[i].bytesOut, b[i].bytesOut);
      EXPECT_EQ(a[i].worldSize, b[i].worldSize);
      EXPECT_EQ(a[i].issueNs, b[i].issueNs);
      EXPECT_EQ(a[i].ownPartBytes, b[i].ownPartBytes);
      EXPECT_EQ(a[i].peer, b[i].peer);
      EXPECT_EQ(a[i].processGroup, b[i].processGroup);
    }
  }
}

TEST(PerfettoTrace, ARecordingComesBackWhole) {
  const auto dir = testing::freshTempDir("perfetto_round_trip");
  const RunRecording original = recordedRun(dir);
  {
    std::ofstream out(dir + "/t.pftrace", std::ios::binary);
    writeTrace(TraceFormat::Perfetto, out, original, {{"strategy", "full_shard"}, {"world", 2}},
               {12345, 0, 0, {"cpu / gloo", "cpu / gloo"}});
  }
  ASSERT_EQ(original.originNs(), 1) << "the JSON reader starts its times at 1, so both share one origin";
  const auto loaded = loadPerfettoTrace(dir + "/t.pftrace");
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.config.strategy, config::StrategyKind::FullShard);
  EXPECT_EQ(loaded.parameterCount, 12345);
  EXPECT_EQ(loaded.rankPlacements.size(), 2u);
  const RunRecording& back = loaded.recording;
  ASSERT_EQ(back.ranks(), original.ranks());
  for (int r = 0; r < back.ranks(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto &a = original.rank(r), &b = back.rank(r);
    expectSameSpans(a.compute, b.compute, "compute");
    expectSameSpans(a.collectives, b.collectives, "collective");
    expectSameSpans(a.groups, b.groups, "group");
    ASSERT_EQ(a.steps.size(), b.steps.size());
    EXPECT_EQ(bytesByTime(a.memory), bytesByTime(b.memory)) << "what the rank held at every time it recorded";
    EXPECT_EQ(a.peakTotal, b.peakTotal);
    EXPECT_EQ(a.peakByRole, b.peakByRole);
    // Every unit's holding at every time the rank recorded memory: a sample's unit values ride in
    // its rank's counter event (extra counter values), and must come back at that time.
    for (int32_t unit : original.recordedUnits()) {
      for (size_t k = 0; k < a.memory.size(); ++k) {
        ASSERT_EQ(original.unitMemoryAt(r, unit, a.memory.time(k)), back.unitMemoryAt(r, unit, a.memory.time(k)))
            << unitName(unit) << " at sample " << k;
      }
    }
  }
  EXPECT_EQ(back.recordedUnits(), original.recordedUnits());
}

// Told by its content: a .pftrace renamed .json is still one, and a JSON trace that starts with a
// newline (0x0A, as a packet does) is not.
TEST(PerfettoTrace, IsToldByItsContentNotItsName) {
  const auto dir = testing::freshTempDir("perfetto_sniff");
  RunRecording rec(1);
  Event step;
  step.kind = EventKind::Compute;
  step.op = static_cast<uint8_t>(ComputeKind::Step);
  step.beginNs = 10;
  step.endNs = 20;
  rec.add(step);
  {
    std::ofstream out(dir + "/renamed.json", std::ios::binary);
    writeTrace(TraceFormat::Perfetto, out, rec, nlohmann::json::object(), {});
  }
  EXPECT_TRUE(looksLikePerfettoTrace(dir + "/renamed.json"));
  std::ofstream(dir + "/newline.json") << "\n{\"traceEvents\": []}";
  EXPECT_FALSE(looksLikePerfettoTrace(dir + "/newline.json"));
  const auto loaded = loadPerfettoTrace(dir + "/renamed.json");
  EXPECT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.recording.rank(0).steps.size(), 1u);
}

// The reader takes the file in blocks of a few MiB: packets that straddle two blocks, and one
// larger than a block (a long label's), come back whole.
TEST(PerfettoTrace, PacketsAcrossAndLargerThanTheReadersBlocksComeBackWhole) {
  const auto dir = testing::freshTempDir("perfetto_blocks");
  constexpr int kSteps = 200000;
  RunRecording rec(1);
  for (int k = 0; k < kSteps; ++k) {
    Event step;
    step.kind = EventKind::Compute;
    step.op = static_cast<uint8_t>(ComputeKind::Step);
    step.step = k;
    step.beginNs = 10 + 100 * int64_t{k};
    step.endNs = step.beginNs + 50 + k % 7;
    rec.add(step);
  }
  Event group;  // its label interned in a packet of its own, 9 MiB: two blocks and more
  group.kind = EventKind::Group;
  group.beginNs = group.endNs = 20;
  group.text = std::string(size_t{9} << 20, 'x');
  rec.add(group);
  {
    std::ofstream out(dir + "/t.pftrace", std::ios::binary);
    writeTrace(TraceFormat::Perfetto, out, rec, {{"strategy", "full_shard"}}, {});
  }
  const auto loaded = loadPerfettoTrace(dir + "/t.pftrace");
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.config.strategy, config::StrategyKind::FullShard);
  ASSERT_EQ(loaded.recording.rank(0).groups.size(), 1u);
  EXPECT_EQ(loaded.recording.rank(0).groups[0].toEvent(0).text, group.text) << "the packet larger than a block";
  const auto& steps = loaded.recording.rank(0).steps;
  ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps));
  for (int k = 0; k < kSteps; k += 997) {
    EXPECT_EQ(steps[static_cast<size_t>(k)].endNs - steps[static_cast<size_t>(k)].beginNs, 50 + k % 7) << k;
  }
}

// A counter past anything a device or host holds is a damaged file's: refused, naming its lane.
TEST(PerfettoTrace, AMemoryCounterPastAPetabyteIsRefused) {
  const auto dir = testing::freshTempDir("perfetto_huge");
  RunRecording rec(1);
  Event m;
  m.kind = EventKind::Memory;
  m.beginNs = 10;
  m.role = static_cast<uint8_t>(MemoryRole::Activation);
  m.bytes = kMaxMemoryBytes + 1;
  rec.add(m);
  {
    std::ofstream out(dir + "/huge.pftrace", std::ios::binary);
    writeTrace(TraceFormat::Perfetto, out, rec, nlohmann::json::object(), {});
  }
  const auto loaded = loadPerfettoTrace(dir + "/huge.pftrace");
  EXPECT_NE(loaded.error.find("a memory counter of 1125899906842625 bytes on \"memory activation\" of rank 0"),
            std::string::npos)
      << loaded.error;
}

// A collective the backend failed is written where the rank saw it fail, with what it was to move
// and its issue, and read back as failed from either format: never as a span, which would read as
// a completed collective as long as the timeout.
// `rec` written to `path` in `format`, and read back.
LoadedTrace writtenAndRead(TraceFormat format, const RunRecording& rec, const std::string& path) {
  {
    std::ofstream out(path, std::ios::binary);
    writeTrace(format, out, rec, nlohmann::json::object(), {});
  }
  return format == TraceFormat::Perfetto ? loadPerfettoTrace(path) : loadChromeTrace(path);
}

TEST(PerfettoTrace, AFailedCollectiveComesBackAsFailedInEitherFormat) {
  const auto dir = testing::freshTempDir("failed_collective");
  RunRecording rec(2);
  Event step;
  step.kind = EventKind::Compute;
  step.op = static_cast<uint8_t>(ComputeKind::Step);
  step.step = 0;
  step.beginNs = 1000;
  step.endNs = 5000;
  rec.add(step);
  Event failed;
  failed.kind = EventKind::CollectiveFailed;
  failed.rank = 1;
  failed.step = 1;
  failed.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  failed.phase = static_cast<uint8_t>(Phase::Forward);
  failed.issueNs = 6000;
  failed.beginNs = 2'000'006'000;  // its 2 s timeout passed
  failed.bytes = 4096;
  failed.bytesOut = 8192;
  failed.worldSize = 2;
  failed.processGroup = static_cast<uint8_t>(ProcessGroup::Shard);
  failed.text = collectiveText("blocks.1", "all_gather(broadcast from each rank)", CollectiveOp::AllGather);
  std::string frame;  // through the wire first, as a rank's events reach the controller
  appendEventFrame(frame, failed);
  ASSERT_TRUE(decodeStreamItem(frame).has_value());
  rec.add(*decodeStreamItem(frame));
  for (const auto format : {TraceFormat::ChromeJson, TraceFormat::Perfetto}) {
    const std::string path = dir + (format == TraceFormat::Perfetto ? "/t.pftrace" : "/t.json");
    const auto loaded = writtenAndRead(format, rec, path);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    const RankTimeline& rank1 = loaded.recording.rank(1);
    EXPECT_TRUE(rank1.collectives.empty()) << "no span: it never ended";
    ASSERT_EQ(rank1.failedCollectives.size(), 1u) << path;
    const Event& back = rank1.failedCollectives[0];
    EXPECT_EQ(back.kind, EventKind::CollectiveFailed);
    EXPECT_EQ(back.op, failed.op);
    EXPECT_EQ(back.step, 1);
    EXPECT_EQ(back.phase, failed.phase);
    EXPECT_EQ(back.bytes, 4096);
    EXPECT_EQ(back.bytesOut, 8192);
    EXPECT_EQ(back.worldSize, 2);
    EXPECT_EQ(back.processGroup, failed.processGroup);
    EXPECT_EQ(back.text, failed.text);
    EXPECT_EQ(back.beginNs - back.issueNs, 2'000'000'000) << "in flight from its issue until it failed";
    EXPECT_EQ(back.beginNs - loaded.recording.rank(0).steps[0].beginNs, 2'000'005'000);
    EXPECT_NE(loaderNotes("t", loaded)
                  .find("t: rank 1: all_gather blocks.1 [shard] in step 2 failed after 2.00 s in "
                        "flight (its timeout passed or a peer went away): it never ended"),
              std::string::npos)
        << loaderNotes("t", loaded);
  }
}

// A time past 2^62 ns from the trace's origin is a damaged file's: refused, naming the timestamp,
// before a span's end less its begin (or a clock's sum) can overflow.
// A step's time is the rank's, from before its batch to after its loss's all-reduce, not its
// training span's: a reopened trace gives the run's step times in either format.
TEST(PerfettoTrace, AStepComesBackTimedAsTheRankTimedIt) {
  const auto dir = testing::freshTempDir("step_times");
  RunRecording rec(1);
  Event span;
  span.kind = EventKind::Compute;
  span.op = static_cast<uint8_t>(ComputeKind::Step);
  span.step = 0;
  span.beginNs = 1'000'300;
  span.endNs = 1'004'000;
  rec.add(span);
  Event end = span;
  end.kind = EventKind::StepEnd;
  end.beginNs = 1'000'000;  // before its batch was made
  end.endNs = 1'004'700;    // after its loss's all-reduce
  end.loss = 2.5;
  rec.add(end);
  for (const auto format : {TraceFormat::ChromeJson, TraceFormat::Perfetto}) {
    const std::string path = dir + (format == TraceFormat::Perfetto ? "/t.pftrace" : "/t.json");
    const auto loaded = writtenAndRead(format, rec, path);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    EXPECT_EQ(loaded.recording.stepSeconds(0), std::vector<double>{4'700e-9}) << path;
    ASSERT_EQ(loaded.recording.rank(0).compute.size(), 1u);
    const auto& back = loaded.recording.rank(0).compute[0];
    EXPECT_EQ(back.endNs - back.beginNs, 3'700) << "the span stays the training step's";
  }
}

TEST(PerfettoTrace, ATimePastTwoToTheSixtyTwoNanosecondsIsRefused) {
  const auto dir = testing::freshTempDir("perfetto_far");
  RunRecording rec(1);
  Event step;
  step.kind = EventKind::Compute;
  step.op = static_cast<uint8_t>(ComputeKind::Step);
  step.step = 0;
  step.beginNs = 10;
  step.endNs = 20;
  rec.add(step);
  step.step = 1;
  step.beginNs = 10 + kMaxTimeNs + 100;
  step.endNs = step.beginNs + 10;
  rec.add(step);
  {
    std::ofstream out(dir + "/far.pftrace", std::ios::binary);
    writeTrace(TraceFormat::Perfetto, out, rec, nlohmann::json::object(), {});
  }
  const auto loaded = loadPerfettoTrace(dir + "/far.pftrace");
  EXPECT_NE(loaded.error.find("has an event whose timestamp, 4611686018427388004 ns, puts it past 2^62 ns (146 "
                              "years) from its clock's zero"),
            std::string::npos)
      << loaded.error;
}

// An offset inside the first packet that starts at or after `from`: one byte past its tag. Cut at
// a boundary between packets, a trace is a shorter whole trace (the cut at half the bytes once
// fell on one), so the cut is placed inside a packet.
size_t insideAPacketPast(const std::string& bytes, size_t from) {
  size_t at = 0;
  while (at < bytes.size()) {
    if (at >= from) return at + 1;
    ++at;  // Trace.packet's tag (field 1, length-delimited: 0x0a)
    uint64_t length = 0;
    for (int shift = 0; at < bytes.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes[at++]);
      length |= uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80)) break;
    }
    at += length;
  }
  ADD_FAILURE() << "no packet starts at or after byte " << from;
  return from;
}

// A file cut short, or another file's bytes, is refused naming the file and where it broke.
TEST(PerfettoTrace, ADamagedFileIsRefusedSayingWhere) {
  const auto dir = testing::freshTempDir("perfetto_damaged");
  const RunRecording original = recordedRun(dir);
  std::ostringstream whole;
  writeTrace(TraceFormat::Perfetto, whole, original, nlohmann::json::object(), {});
  const std::string bytes = whole.str();
  std::ofstream(dir + "/cut.pftrace", std::ios::binary) << bytes.substr(0, insideAPacketPast(bytes, bytes.size() / 2));
  const auto cut = loadPerfettoTrace(dir + "/cut.pftrace");
  EXPECT_NE(cut.error.find("cut.pftrace"), std::string::npos) << cut.error;
  EXPECT_NE(cut.error.find("packet"), std::string::npos) << cut.error;
  std::ofstream(dir + "/other.pftrace", std::ios::binary) << "\x0a\x03\x08\x01\x0b garbage";
  EXPECT_FALSE(loadPerfettoTrace(dir + "/other.pftrace").error.empty());
}

}  // namespace
}  // namespace shardscope::trace
