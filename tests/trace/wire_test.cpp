#include "trace/wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "trace/zigzag.h"

namespace shardscope::trace {
namespace {

// An event through a binary frame, as ranks send it, and through a JSON line, as older streams
// hold it: the two must give the same event back.
std::optional<Event> viaFrame(const Event& e) {
  std::string frame;
  appendEventFrame(frame, e);
  return decodeStreamItem(frame);
}
std::optional<Event> viaLine(const Event& e) {
  const std::string line = encodeEventLine(e);
  return decodeStreamItem(std::string_view(line).substr(0, line.size() - 1));
}

TEST(Wire, RoundTripsEveryField) {
  Event e;
  e.kind = EventKind::StepEnd;
  e.rank = 3;
  e.step = 7;
  e.beginNs = 123456789012345;
  e.endNs = 123456789999999;
  e.loss = 2.302585;
  e.worldSize = 4;
  e.text = "cpu / gloo \"quoted\"\nnewline";
  const std::string line = encodeEventLine(e);
  ASSERT_EQ(line.back(), '\n');
  ASSERT_EQ(line.find('\n'), line.size() - 1) << "one event must be exactly one line";
  for (const auto& back : {viaFrame(e), viaLine(e)}) {
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->kind, e.kind);
    EXPECT_EQ(back->rank, e.rank);
    EXPECT_EQ(back->step, e.step);
    EXPECT_EQ(back->beginNs, e.beginNs);
    EXPECT_EQ(back->endNs, e.endNs);
    EXPECT_DOUBLE_EQ(back->loss, e.loss);
    EXPECT_EQ(back->worldSize, e.worldSize);
    EXPECT_EQ(back->text, e.text);
  }
}

// A GPU rank's RunInfo carries its device's memory and the matmul peak it measured; the run's
// capacity line and MFU come from them (they were once dropped on the wire, so a GPU run reported
// neither: found on an H200).
TEST(Wire, RunInfoKeepsTheDevicesMemoryAndMeasuredPeak) {
  Event e;
  e.kind = EventKind::RunInfo;
  e.parameterCount = 1341624320;
  e.deviceMemoryBytes = 150'754'820'096;
  e.peakFlopsPerSecond = 779'000'000'000'000;
  e.text = "cuda:0 / nccl";
  for (const auto& back : {viaFrame(e), viaLine(e)}) {
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->deviceMemoryBytes, e.deviceMemoryBytes);
    EXPECT_EQ(back->peakFlopsPerSecond, e.peakFlopsPerSecond);
    EXPECT_EQ(back->parameterCount, e.parameterCount);
    EXPECT_EQ(back->bytes, 0) << "a RunInfo moves no bytes";
    EXPECT_EQ(back->text, e.text);
  }
}

// A frame as shardscope wrote it before each kind's figure had a field of its own: its kind, a
// mask of the fields it carries by their bit then (bytes 4, op 7, bytes out 11, count 13), and their
// zigzagged values. Frozen here, as rank-R.events files of those runs hold them.
std::optional<Event> viaOlderFrame(EventKind kind, const std::vector<std::pair<int, int64_t>>& bitsAndValues) {
  std::string payload(1, static_cast<char>(kind));
  const auto varint = [&](uint64_t v) {
    for (; v >= 0x80; v >>= 7) payload += static_cast<char>(static_cast<uint8_t>(v) | 0x80);
    payload += static_cast<char>(v);
  };
  uint64_t mask = 0;
  for (const auto& [bit, value] : bitsAndValues) mask |= uint64_t{1} << bit;
  varint(mask);
  for (const auto& [bit, value] : bitsAndValues) varint(zigzag(value));  // in the order of their bits
  std::string frame(1, static_cast<char>(kFrameMark));
  frame += static_cast<char>(payload.size());
  return decodeStreamItem(frame + payload);
}

TEST(Wire, OlderFramesFiguresReadIntoTheirOwnFields) {
  constexpr int bytes = 4, op = 7, bytesOut = 11, count = 13;
  const auto runInfo =
      viaOlderFrame(EventKind::RunInfo, {{bytes, 80'000'000'000}, {bytesOut, 990'000'000'000'000}, {count, 1'234'567}});
  ASSERT_TRUE(runInfo);
  EXPECT_EQ(runInfo->deviceMemoryBytes, 80'000'000'000);
  EXPECT_EQ(runInfo->peakFlopsPerSecond, 990'000'000'000'000);
  EXPECT_EQ(runInfo->parameterCount, 1'234'567);
  EXPECT_EQ(runInfo->bytes, 0);
  EXPECT_EQ(runInfo->bytesOut, 0);
  EXPECT_EQ(viaOlderFrame(EventKind::RunDone, {{count, 17}})->droppedEvents, 17);
  EXPECT_EQ(viaOlderFrame(EventKind::Dropped, {{count, 5}})->droppedEvents, 5);
  EXPECT_EQ(viaOlderFrame(EventKind::ClockOffset, {{count, -1}})->uncertaintyNs, -1);
  EXPECT_EQ(viaOlderFrame(EventKind::CollectiveIssued, {{count, 42}})->sequence, 42);
  const auto allToAll = viaOlderFrame(EventKind::Collective,
                                      {{bytes, 4096}, {op, static_cast<int>(CollectiveOp::AllToAll)}, {count, 1024}});
  EXPECT_EQ(allToAll->ownPartBytes, 1024);
  EXPECT_EQ(allToAll->peer, 0);
  EXPECT_EQ(allToAll->bytes, 4096) << "a collective's bytes stay its own";
  const auto send = viaOlderFrame(EventKind::Collective, {{op, static_cast<int>(CollectiveOp::Send)}, {count, -1}});
  EXPECT_EQ(send->peer, -1);
  EXPECT_EQ(send->ownPartBytes, 0);
  const auto stepEnd = viaOlderFrame(EventKind::StepEnd, {{count, 1}});
  ASSERT_TRUE(stepEnd) << "a step end's count (whether it was recorded) is read and set aside";
}

TEST(Wire, CollectivesAndComputeSpansKeepTheirMicroBatch) {
  for (EventKind kind : {EventKind::Collective, EventKind::Compute}) {
    Event e;
    e.kind = kind;
    e.step = 2;
    e.microBatch = 3;
    e.phase = static_cast<uint8_t>(Phase::Backward);
    e.text = "blocks.1";
    for (const auto& back : {viaFrame(e), viaLine(e)}) {
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(back->microBatch, 3);
      EXPECT_EQ(back->step, 2);
    }
    // A step that is one batch writes no key, so such streams read as before.
    e.microBatch = 0;
    const std::string plain = encodeEventLine(e);
    EXPECT_EQ(plain.find("\"mb\""), std::string::npos) << plain;
    EXPECT_EQ(decodeEventLine(plain.substr(0, plain.size() - 1))->microBatch, 0);
  }
}

// HSDP's collectives say which group they ran in; a 1-D mesh's (the world) write nothing new.
TEST(Wire, CollectivesKeepTheirProcessGroup) {
  Event e;
  e.kind = EventKind::Collective;
  e.op = static_cast<uint8_t>(CollectiveOp::AllReduce);
  e.processGroup = static_cast<uint8_t>(ProcessGroup::Replicate);
  for (const auto& back : {viaFrame(e), viaLine(e)}) {
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->processGroup, static_cast<uint8_t>(ProcessGroup::Replicate));
  }
  e.processGroup = static_cast<uint8_t>(ProcessGroup::World);
  const std::string line = encodeEventLine(e);
  EXPECT_EQ(line.find("\"pg\""), std::string::npos) << line;
  e.processGroup = kProcessGroupCount;  // no such group: refused, not drawn
  EXPECT_FALSE(viaFrame(e).has_value());
  EXPECT_FALSE(viaLine(e).has_value());
}

// An issued collective keeps its number in its group, and its op, group and issue time.
TEST(Wire, AnIssuedCollectiveKeepsItsNumber) {
  Event e;
  e.kind = EventKind::CollectiveIssued;
  e.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  e.processGroup = static_cast<uint8_t>(ProcessGroup::Shard);
  e.issueNs = e.beginNs = 123456789;
  e.sequence = 42;
  e.text = "blocks.1";
  for (const auto& back : {viaFrame(e), viaLine(e)}) {
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->kind, EventKind::CollectiveIssued);
    EXPECT_EQ(back->sequence, 42);
    EXPECT_EQ(back->issueNs, 123456789);
    EXPECT_EQ(back->processGroup, static_cast<uint8_t>(ProcessGroup::Shard));
    EXPECT_EQ(back->text, "blocks.1");
  }
}

TEST(Wire, RejectsTornAndForeignLines) {
  Event e;
  e.kind = EventKind::RankError;
  std::string line = encodeEventLine(e);
  EXPECT_FALSE(decodeEventLine(line.substr(0, line.size() / 2)).has_value());
  EXPECT_FALSE(decodeEventLine("").has_value());
  EXPECT_FALSE(decodeEventLine("{\"k\": \"no_such_kind\"}").has_value());
  EXPECT_FALSE(decodeEventLine("[1,2,3]").has_value());
  EXPECT_FALSE(decodeEventLine("{\"k\": \"step_end\", \"r\": \"zero\"}").has_value());
}

bool sameEvent(const Event& a, const Event& b) {
  return a.kind == b.kind && a.rank == b.rank && a.step == b.step && a.microBatch == b.microBatch &&
         a.beginNs == b.beginNs && a.endNs == b.endNs && a.issueNs == b.issueNs && a.bytes == b.bytes &&
         a.bytesOut == b.bytesOut && a.ownPartBytes == b.ownPartBytes && a.sequence == b.sequence &&
         a.parameterCount == b.parameterCount && a.deviceMemoryBytes == b.deviceMemoryBytes &&
         a.peakFlopsPerSecond == b.peakFlopsPerSecond && a.droppedEvents == b.droppedEvents &&
         a.uncertaintyNs == b.uncertaintyNs && a.peer == b.peer && a.loss == b.loss && a.pausedNs == b.pausedNs &&
         a.worldSize == b.worldSize && a.unit == b.unit && a.role == b.role && a.fromRole == b.fromRole &&
         a.space == b.space && a.phase == b.phase && a.op == b.op && a.processGroup == b.processGroup &&
         a.text == b.text;
}

// Every field at values that stress its encoding (negatives, the extremes of its type, a begin
// time far from its end's), picked at random: each comes back exactly from its frame.
TEST(Wire, FramesGiveBackEveryFieldExactly) {
  std::mt19937_64 rng(77);
  const auto any = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t big = std::numeric_limits<int64_t>::max() / 4;
  for (int i = 0; i < 2000; ++i) {
    Event e;
    e.kind = static_cast<EventKind>(any(0, static_cast<int>(EventKind::CollectiveIssued)));
    e.rank = static_cast<int32_t>(any(0, kMaxRanks - 1));
    e.step = static_cast<int32_t>(any(-1, INT32_MAX));
    e.microBatch = static_cast<int32_t>(any(0, 64));
    e.beginNs = any(-big, big);
    e.endNs = any(0, 3) == 0 ? 0 : any(-big, big);
    e.issueNs = any(0, 3) == 0 ? 0 : any(-big, big);
    e.bytes = any(INT64_MIN, INT64_MAX);
    e.bytesOut = any(INT64_MIN, INT64_MAX);
    // A RunInfo's device figures have fields of their own; its byte fields mean nothing (older
    // frames put the figures there, and are read so).
    if (e.kind == EventKind::RunInfo) e.bytes = e.bytesOut = 0;
    e.ownPartBytes = any(-1, INT64_MAX);
    e.sequence = any(0, INT64_MAX);
    e.parameterCount = any(0, INT64_MAX);
    e.deviceMemoryBytes = any(0, INT64_MAX);
    e.peakFlopsPerSecond = any(0, INT64_MAX);
    e.droppedEvents = any(0, INT64_MAX);
    e.uncertaintyNs = any(-1, INT64_MAX);
    e.peer = static_cast<int32_t>(any(-1, kMaxRanks - 1));
    e.loss = any(0, 1) ? std::uniform_real_distribution<double>(-1e9, 1e9)(rng) : -0.0;
    e.pausedNs = any(0, big);
    e.worldSize = static_cast<int32_t>(any(0, kMaxRanks));
    e.unit = any(0, 4) == 0 ? kNoUnit : static_cast<int32_t>(any(-1, INT32_MAX));
    e.role = static_cast<uint8_t>(any(0, kMemoryRoleCount - 1));
    e.fromRole = any(0, 1) ? kNoRole : static_cast<uint8_t>(any(0, kMemoryRoleCount - 1));
    e.space = static_cast<uint8_t>(any(0, 1));
    e.phase = static_cast<uint8_t>(any(0, 3));
    e.op = static_cast<uint8_t>(any(0, kGroupKindCount - 1));  // a value every kind has
    e.processGroup = static_cast<uint8_t>(any(0, kProcessGroupCount - 1));
    e.text = std::string(static_cast<size_t>(any(0, 300)), static_cast<char>(any(0, 255)));
    const auto back = viaFrame(e);
    ASSERT_TRUE(back.has_value()) << i;
    EXPECT_TRUE(sameEvent(*back, e)) << i;
    EXPECT_EQ(std::signbit(back->loss), std::signbit(e.loss));
  }
}

// What the wire is for: a memory event, the most frequent, in under a third of its JSON line.
TEST(Wire, AMemoryEventIsAFewBytes) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = 3;
  e.step = 1234;
  e.beginNs = 1'790'000'000'123'456'789;  // a steady clock's nanoseconds, months after boot
  e.bytes = -1'048'576;
  e.role = static_cast<uint8_t>(MemoryRole::Activation);
  e.unit = 11;
  std::string frame;
  appendEventFrame(frame, e);
  EXPECT_LE(frame.size(), 24u) << "JSON line: " << encodeEventLine(e).size();
  EXPECT_LE(frame.size() * 3, encodeEventLine(e).size());
}

TEST(Wire, DamagedFramesAreRefused) {
  Event e;
  e.kind = EventKind::Collective;
  e.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  e.beginNs = 5'000;
  e.text = "blocks.0";
  std::string frame;
  appendEventFrame(frame, e);
  ASSERT_TRUE(decodeStreamItem(frame).has_value());
  for (size_t cut = 0; cut < frame.size(); ++cut) {
    EXPECT_FALSE(decodeStreamItem(std::string_view(frame).substr(0, cut)).has_value()) << cut;
  }
  std::string longer = frame + "x";
  EXPECT_FALSE(decodeStreamItem(longer).has_value()) << "a byte past the frame's length";
  std::string unknownKind = frame;
  unknownKind[2] = static_cast<char>(200);  // the payload's first byte: its kind
  EXPECT_FALSE(decodeStreamItem(unknownKind).has_value());
  std::string unknownOp = frame;
  e.op = kCollectiveOpCount;
  unknownOp.clear();
  appendEventFrame(unknownOp, e);
  EXPECT_FALSE(decodeStreamItem(unknownOp).has_value()) << "an op this vocabulary lacks";
  // Every single byte changed, every way: refused or read, never a crash (and a kind stays known).
  for (size_t at = 0; at < frame.size(); ++at) {
    for (int b = 0; b < 256; ++b) {
      std::string damaged = frame;
      damaged[at] = static_cast<char>(b);
      const auto back = decodeStreamItem(damaged);
      if (back) EXPECT_LE(static_cast<int>(back->kind), static_cast<int>(EventKind::CollectiveFailed));
    }
  }
}

// A rank's stream as it travels: frames, heartbeats, a hello-like control line and an older JSON
// line, cut into reads of any size. Each item comes back whole, in order, and itemEnd() counts
// the stream's bytes through it.
TEST(Wire, SplitterReassemblesItemsAcrossArbitraryReads) {
  std::string stream;
  std::vector<uint64_t> ends;
  for (int i = 0; i < 300; ++i) {
    Event e;
    e.step = i;
    e.text = std::string(static_cast<size_t>(i % 17), '\n');  // newlines inside a frame's string
    if (i % 50 == 7) stream += "{\"hello\":\"shardscope.collector/2\"}\n";
    if (i % 10 == 3) stream += "\n";
    if (i % 25 == 5) {
      stream += encodeEventLine(e);
    } else {
      appendEventFrame(stream, e);
    }
    ends.push_back(stream.size());
  }
  std::mt19937 rng(1234);
  StreamSplitter splitter;
  std::vector<int> steps;
  int undecoded = 0;
  for (size_t pos = 0; pos < stream.size();) {
    size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % 97);
    splitter.feed(stream.data() + pos, n, [&](std::string_view item) {
      auto e = decodeStreamItem(item);
      if (!e) {
        ++undecoded;
        return;
      }
      EXPECT_EQ(splitter.itemEnd(), ends[steps.size()]) << steps.size();
      steps.push_back(e->step);
    });
    pos += n;
  }
  EXPECT_EQ(splitter.pendingBytes(), 0u);
  EXPECT_EQ(undecoded, 6 + 30) << "hellos and heartbeats, nothing else undecoded";
  ASSERT_EQ(steps.size(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(steps[i], i);
  // A place to cut the stream at an item's start, at or past any byte.
  for (size_t from : {size_t{0}, size_t{1}, stream.size() / 3, stream.size() / 2, stream.size()}) {
    const size_t cut = itemBoundaryFrom(stream, from);
    ASSERT_NE(cut, std::string::npos);
    EXPECT_GE(cut, from);
    StreamSplitter rest;
    rest.feed(stream.data() + cut, stream.size() - cut, [](std::string_view) {});
    EXPECT_EQ(rest.pendingBytes(), 0u) << "the rest starts with a whole item, cut at " << cut;
  }
}

}  // namespace
}  // namespace shardscope::trace
