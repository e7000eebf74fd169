#include "trace/wire.h"

#include <gtest/gtest.h>

#include <random>

namespace shardscope::trace {
namespace {

TEST(Wire, RoundTripsEveryField) {
  Event e;
  e.kind = EventKind::StepEnd;
  e.rank = 3;
  e.step = 7;
  e.beginNs = 123456789012345;
  e.endNs = 123456789999999;
  e.loss = 2.302585;
  e.count = 42;
  e.worldSize = 4;
  e.text = "cpu / gloo \"quoted\"\nnewline";
  const std::string line = encodeEventLine(e);
  ASSERT_EQ(line.back(), '\n');
  ASSERT_EQ(line.find('\n'), line.size() - 1) << "one event must be exactly one line";
  auto back = decodeEventLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->kind, e.kind);
  EXPECT_EQ(back->rank, e.rank);
  EXPECT_EQ(back->step, e.step);
  EXPECT_EQ(back->beginNs, e.beginNs);
  EXPECT_EQ(back->endNs, e.endNs);
  EXPECT_DOUBLE_EQ(back->loss, e.loss);
  EXPECT_EQ(back->count, e.count);
  EXPECT_EQ(back->worldSize, e.worldSize);
  EXPECT_EQ(back->text, e.text);
}

// A GPU rank's RunInfo carries its device's memory and the matmul peak it measured; the run's
// capacity line and MFU come from them (they were once dropped on the wire, so a GPU run reported
// neither: found on an H200).
TEST(Wire, RunInfoKeepsTheDevicesMemoryAndMeasuredPeak) {
  Event e;
  e.kind = EventKind::RunInfo;
  e.count = 1341624320;
  e.bytes = 150'754'820'096;
  e.bytesOut = 779'000'000'000'000;
  e.text = "cuda:0 / nccl";
  const std::string line = encodeEventLine(e);
  auto back = decodeEventLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(back->bytes, e.bytes);
  EXPECT_EQ(back->bytesOut, e.bytesOut);
  EXPECT_EQ(back->count, e.count);
  EXPECT_EQ(back->text, e.text);
}

TEST(Wire, CollectivesAndComputeSpansKeepTheirMicroBatch) {
  for (EventKind kind : {EventKind::Collective, EventKind::Compute}) {
    Event e;
    e.kind = kind;
    e.step = 2;
    e.microBatch = 3;
    e.phase = static_cast<uint8_t>(Phase::Backward);
    e.text = "blocks.1";
    const std::string line = encodeEventLine(e);
    auto back = decodeEventLine(line.substr(0, line.size() - 1));
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(back->microBatch, 3) << line;
    EXPECT_EQ(back->step, 2);
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
  std::string line = encodeEventLine(e);
  auto back = decodeEventLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(back->processGroup, static_cast<uint8_t>(ProcessGroup::Replicate));
  e.processGroup = static_cast<uint8_t>(ProcessGroup::World);
  line = encodeEventLine(e);
  EXPECT_EQ(line.find("\"pg\""), std::string::npos) << line;
  e.processGroup = kProcessGroupCount;  // no such group: refused, not drawn
  line = encodeEventLine(e);
  EXPECT_FALSE(decodeEventLine(line.substr(0, line.size() - 1)).has_value()) << line;
}

// An issued collective keeps its number in its group (count), and its op, group and issue time.
TEST(Wire, AnIssuedCollectiveKeepsItsNumber) {
  Event e;
  e.kind = EventKind::CollectiveIssued;
  e.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  e.processGroup = static_cast<uint8_t>(ProcessGroup::Shard);
  e.issueNs = e.beginNs = 123456789;
  e.count = 42;
  e.text = "blocks.1";
  const std::string line = encodeEventLine(e);
  auto back = decodeEventLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(back->kind, EventKind::CollectiveIssued);
  EXPECT_EQ(back->count, 42);
  EXPECT_EQ(back->issueNs, 123456789);
  EXPECT_EQ(back->processGroup, static_cast<uint8_t>(ProcessGroup::Shard));
  EXPECT_EQ(back->text, "blocks.1");
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

TEST(Wire, SplitterReassemblesLinesAcrossArbitraryReads) {
  std::string stream;
  for (int i = 0; i < 200; ++i) {
    Event e;
    e.step = i;
    e.text = std::string(static_cast<size_t>(i % 17), 'x');
    stream += encodeEventLine(e);
  }
  std::mt19937 rng(1234);
  LineSplitter splitter;
  std::vector<int> steps;
  for (size_t pos = 0; pos < stream.size();) {
    size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % 97);
    splitter.feed(stream.data() + pos, n, [&](std::string_view line) {
      auto e = decodeEventLine(line);
      ASSERT_TRUE(e.has_value()) << line;
      steps.push_back(e->step);
    });
    pos += n;
  }
  ASSERT_EQ(steps.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(steps[i], i);
}

}  // namespace
}  // namespace shardscope::trace
