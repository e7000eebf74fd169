// The packed span records a rank's timeline keeps, and the names they share.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trace/names.h"
#include "trace/run_recording.h"
#include "trace/spans.h"

namespace shardscope::trace {
namespace {

TEST(Names, OneIdPerNameAndItsTextBack) {
  const NameId a = internName("blocks.3|all_gather_into_tensor");
  EXPECT_EQ(internName("blocks.3|all_gather_into_tensor"), a);
  EXPECT_NE(internName("blocks.4"), a);
  EXPECT_EQ(nameOf(a), "blocks.3|all_gather_into_tensor");
  EXPECT_EQ(internName(""), kEmptyName);
  EXPECT_EQ(nameOf(kEmptyName), "");
}

// Readers of several ranks intern at once while others look names up: every thread gets the same
// id for a name, and each id gives back its name, past a chunk of the table.
TEST(Names, ThreadsInterningAtOnceAgree) {
  constexpr int kThreads = 4, kNames = 6007;  // prime: i x (t + 1) visits every name
  std::vector<std::vector<NameId>> ids(kThreads, std::vector<NameId>(kNames));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kNames; ++i) {
        const int n = (i * (t + 1)) % kNames;  // each thread in its own order
        const std::string name = "kernel_" + std::to_string(n);
        ids[t][n] = internName(name);
        EXPECT_EQ(nameOf(ids[t][n]), name);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[0]);
}

Event collective() {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = 1;
  e.step = 7;
  e.microBatch = 2;
  e.issueNs = 90;
  e.beginNs = 100;
  e.endNs = 250;
  e.bytes = 1 << 20;
  e.bytesOut = 4 << 20;
  e.ownPartBytes = -1;
  e.peer = -1;
  e.worldSize = 4;
  e.op = static_cast<uint8_t>(CollectiveOp::AllGather);
  e.phase = static_cast<uint8_t>(Phase::Backward);
  e.processGroup = static_cast<uint8_t>(ProcessGroup::Shard);
  e.text = "blocks.2|all_gather_into_tensor";
  return e;
}

TEST(Spans, ACollectiveKeepsEveryFieldItUses) {
  const Event e = collective();
  const Event back = CollectiveSpan::of(e).toEvent(1);
  EXPECT_EQ(back.kind, e.kind);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.step, e.step);
  EXPECT_EQ(back.microBatch, e.microBatch);
  EXPECT_EQ(back.issueNs, e.issueNs);
  EXPECT_EQ(back.beginNs, e.beginNs);
  EXPECT_EQ(back.endNs, e.endNs);
  EXPECT_EQ(back.bytes, e.bytes);
  EXPECT_EQ(back.bytesOut, e.bytesOut);
  EXPECT_EQ(back.ownPartBytes, e.ownPartBytes);
  EXPECT_EQ(back.peer, e.peer);
  EXPECT_EQ(back.worldSize, e.worldSize);
  EXPECT_EQ(back.op, e.op);
  EXPECT_EQ(back.phase, e.phase);
  EXPECT_EQ(back.processGroup, e.processGroup);
  EXPECT_EQ(back.text, e.text);
  const auto span = CollectiveSpan::of(e);
  EXPECT_EQ(collectiveSpanName(span), collectiveSpanName(e));
  EXPECT_EQ(collectiveSizeBytes(span), 4 << 20);
  EXPECT_EQ(collectiveUnit(span), "blocks.2");
  EXPECT_EQ(collectiveImplementation(span), "all_gather_into_tensor");
}

TEST(Spans, ComputeAndGroupsKeepTheirFieldsAndNames) {
  Event c;
  c.kind = EventKind::Compute;
  c.step = 3;
  c.microBatch = 1;
  c.beginNs = 10;
  c.endNs = 20;
  c.op = static_cast<uint8_t>(ComputeKind::Forward);
  c.phase = static_cast<uint8_t>(Phase::Backward);
  c.text = "blocks.0";
  const auto span = ComputeSpan::of(c);
  EXPECT_TRUE(isRecomputation(span));
  EXPECT_EQ(computeSpanName(span), "recompute blocks.0");
  const Event back = span.toEvent(0);
  EXPECT_EQ(back.kind, EventKind::Compute);
  EXPECT_EQ(back.step, 3);
  EXPECT_EQ(back.microBatch, 1);
  EXPECT_EQ(back.endNs, 20);
  EXPECT_EQ(back.text, "blocks.0");

  Event g;
  g.kind = EventKind::Group;
  g.step = 3;
  g.beginNs = 5;
  g.endNs = 9;
  g.op = static_cast<uint8_t>(GroupKind::Reshard);
  g.phase = static_cast<uint8_t>(Phase::Forward);
  g.text = "reshard blocks.0 after its forward";  // past std::string's 15 inline characters
  const Event gBack = GroupSpan::of(g).toEvent(2);
  EXPECT_EQ(gBack.kind, EventKind::Group);
  EXPECT_EQ(gBack.rank, 2);
  EXPECT_EQ(gBack.endNs, 9);
  EXPECT_EQ(gBack.op, g.op);
  EXPECT_EQ(gBack.phase, g.phase);
  EXPECT_EQ(gBack.text, g.text);
}

// A recording's spans share a name: a thousand collectives of one unit hold one copy of it.
TEST(Spans, ARecordingInternsEachNameOnce) {
  RunRecording rec(1);
  Event e = collective();
  e.rank = 0;
  e.text = "unit-named-once-" + std::to_string(internedNames());
  const size_t before = internedNames();
  for (int i = 0; i < 1000; ++i) {
    e.beginNs = e.issueNs = 1000 + i * 10;
    e.endNs = e.beginNs + 5;
    rec.add(e);
  }
  EXPECT_EQ(internedNames(), before + 1);
  ASSERT_EQ(rec.rank(0).collectives.size(), 1000u);
  EXPECT_EQ(rec.rank(0).collectives.front().name, rec.rank(0).collectives.back().name);
  EXPECT_EQ(rec.rank(0).collectives.back().text(), e.text);
}

// A span named `text` of each kind in turn (compute, collective, event group), from `beginNs`.
Event namedSpan(int k, int rank, int64_t beginNs, const std::string& text) {
  Event e;
  e.kind = k % 3 == 0 ? EventKind::Compute : k % 3 == 1 ? EventKind::Collective : EventKind::Group;
  e.rank = rank;
  e.step = 0;
  e.beginNs = e.issueNs = beginNs;
  e.endNs = beginNs + 5;
  e.text = text;
  return e;
}

// The names of a rank's spans, in the order they were added.
std::vector<std::string> spanNames(const RankTimeline& t) {
  std::vector<std::string> out;
  for (const auto& s : t.compute) out.push_back(s.text());
  for (const auto& s : t.collectives) out.push_back(s.text());
  for (const auto& s : t.groups) out.push_back(s.text());
  std::sort(out.begin(), out.end());
  return out;
}

// A window opens trace after trace, each with names of its own (a profiler trace's kernels): a
// recording holds its names and lets them go with it, so the table holds those of the traces open,
// and a closed trace's ids serve the next one's names. They were kept for the process.
TEST(Names, ARecordingsNamesGoWithIt) {
  constexpr int kTraces = 200, kNamesEach = 60;
  const size_t before = internedNames();
  std::set<NameId> ids;
  for (int t = 0; t < kTraces; ++t) {
    RunRecording rec(2);
    for (int k = 0; k < kNamesEach; ++k) {
      rec.add(namedSpan(k, k % 2, 1000 + k * 10, "trace " + std::to_string(t) + " kernel " + std::to_string(k)));
    }
    ASSERT_EQ(internedNames(), before + kNamesEach) << "trace " << t << " open";
    EXPECT_EQ(rec.rank(1).collectives.at(0).text(), "trace " + std::to_string(t) + " kernel 1");
    for (const auto& s : rec.rank(0).compute) ids.insert(s.name);
    for (const auto& s : rec.rank(1).collectives) ids.insert(s.name);
  }
  EXPECT_EQ(internedNames(), before) << "every trace closed";
  EXPECT_LE(ids.size(), 2u * kNamesEach) << "ids are used again, not one more per name ever seen";
}

// A name two recordings share stays while either holds it, as do a copy's and the names it kept.
TEST(Names, ANameStaysWhileAnyRecordingHoldsIt) {
  const size_t before = internedNames();
  auto first = std::make_unique<RunRecording>(1);
  RunRecording second(1);
  first->add(namedSpan(1, 0, 100, "shared unit|ring"));
  first->add(namedSpan(0, 0, 200, "only the first's"));
  second.add(namedSpan(1, 0, 100, "shared unit|ring"));
  auto copy = std::make_unique<RunRecording>(*first);
  EXPECT_EQ(internedNames(), before + 2);
  first.reset();
  EXPECT_EQ(internedNames(), before + 2) << "the copy holds both";
  copy.reset();
  EXPECT_EQ(internedNames(), before + 1);
  // The ids let go serve new names now; the one still held is untouched.
  RunRecording other(1);
  for (int k = 0; k < 10; ++k) other.add(namedSpan(k, 0, 300 + k * 10, "another trace's kernel " + std::to_string(k)));
  EXPECT_EQ(second.rank(0).collectives.at(0).text(), "shared unit|ring");
  EXPECT_EQ(internedNames(), before + 11);
}

// Folding hands the older detail to a writer thread, which may write it after the recording is
// gone: the detail takes its names with it.
TEST(Names, OlderDetailHandedOnKeepsItsNames) {
  std::vector<RankTimeline> handedOn;
  {
    RunRecording rec(1);
    rec.keepLastSteps(1, [&](int, RankTimeline&& older) { handedOn.push_back(std::move(older)); });
    for (int step = 0; step < 4; ++step) {
      Event compute = namedSpan(0, 0, step * 100 + 10, "unit of step " + std::to_string(step));
      compute.step = step;
      rec.add(compute);
      Event end;
      end.kind = EventKind::StepEnd;
      end.rank = 0;
      end.step = step;
      end.beginNs = step * 100 + 1;
      end.endNs = step * 100 + 90;
      rec.add(end);
    }
  }
  ASSERT_FALSE(handedOn.empty());
  RunRecording later(1);  // names made after the recording was gone: in the ids it let go, if any
  for (int k = 0; k < 10; ++k) later.add(namedSpan(k, 0, 100 + k * 10, "a later trace's kernel " + std::to_string(k)));
  EXPECT_EQ(spanNames(handedOn[0]), std::vector<std::string>{"unit of step 0"});
}

}  // namespace
}  // namespace shardscope::trace
