// The vocabulary the playhead, the step gate and "who holds what" read: Group events, memory
// events naming their unit, and steps that leave out their pauses — on the wire, in the retained
// model, and through a saved Chrome trace.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_cli.h"
#include "trace/chrome_trace.h"
#include "trace/run_recording.h"
#include "trace/trace_reader.h"
#include "trace/wire.h"

namespace shardscope::trace {
namespace {

Event memory(int rank, int64_t t, int64_t bytes, MemoryRole role, int32_t unit, uint8_t fromRole = kNoRole) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  e.bytes = bytes;
  e.role = static_cast<uint8_t>(role);
  e.fromRole = fromRole;
  e.unit = unit;
  return e;
}

Event group(int rank, int64_t begin, int64_t end, GroupKind kind, const std::string& label, int step = 0) {
  Event e;
  e.kind = EventKind::Group;
  e.rank = rank;
  e.step = step;
  e.beginNs = begin;
  e.endNs = end;
  e.op = static_cast<uint8_t>(kind);
  e.phase = static_cast<uint8_t>(Phase::Forward);
  e.text = label;
  return e;
}

TEST(EventGroups, GroupsUnitsAndPausesSurviveTheWire) {
  Event g = group(1, 100, 5000, GroupKind::Reshard, "reshard blocks.2", 3);
  g.microBatch = 2;
  auto back = decodeEventLine(encodeEventLine(g));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, EventKind::Group);
  EXPECT_EQ(back->op, static_cast<uint8_t>(GroupKind::Reshard));
  EXPECT_EQ(back->text, "reshard blocks.2");
  EXPECT_EQ(back->endNs, 5000);
  EXPECT_EQ(back->step, 3);
  EXPECT_EQ(back->microBatch, 2);

  auto m = decodeEventLine(encodeEventLine(memory(0, 7, 4096, MemoryRole::ParamGathered, -1)));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->unit, -1);  // the root
  auto none = decodeEventLine(encodeEventLine(memory(0, 7, 4096, MemoryRole::CommBuffer, kNoUnit)));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->unit, kNoUnit);

  Event step;
  step.kind = EventKind::StepEnd;
  step.beginNs = 1000;
  step.endNs = 9000;
  step.pausedNs = 6000;
  auto s = decodeEventLine(encodeEventLine(step));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pausedNs, 6000);
  EXPECT_EQ(activeStepNs(*s), 2000);

  Event bad = g;
  bad.op = kGroupKindCount;  // no such group kind: refused, not drawn as something else
  EXPECT_FALSE(decodeEventLine(encodeEventLine(bad)));
}

TEST(EventGroups, UnitNamesRoundTrip) {
  EXPECT_EQ(unitName(-1), "root");
  EXPECT_EQ(unitName(12), "blocks.12");
  EXPECT_EQ(unitName(kNoUnit), "");
  EXPECT_EQ(unitFromName("root"), -1);
  EXPECT_EQ(unitFromName("blocks.12"), 12);
  for (const char* notAUnit : {"", "blocks.", "blocks.x", "blocks.3.lora", "bucket 0", "blocks.99999999"}) {
    EXPECT_EQ(unitFromName(notAUnit), kNoUnit) << notAUnit;
  }
}

TEST(EventGroups, EachUnitKeepsItsOwnHoldingsOverTime) {
  RunRecording rec(1);
  rec.add(memory(0, 10, 1000, MemoryRole::ParamShard, 0));
  rec.add(memory(0, 11, 1000, MemoryRole::ParamShard, 1));
  rec.add(memory(0, 20, 2000, MemoryRole::ParamGathered, 0));   // unit 0 gathered
  rec.add(memory(0, 30, -2000, MemoryRole::ParamGathered, 0));  // and resharded
  rec.add(memory(0, 40, 500, MemoryRole::OptimizerState, kNoUnit));
  rec.add(memory(0, 41, 500, MemoryRole::OptimizerState, 1, static_cast<uint8_t>(MemoryRole::OptimizerState)));
  EXPECT_EQ(rec.unitMemoryAt(0, 0, 25)[static_cast<int>(MemoryRole::ParamGathered)], 2000);
  EXPECT_EQ(rec.unitMemoryAt(0, 0, 35)[static_cast<int>(MemoryRole::ParamGathered)], 0);
  EXPECT_EQ(rec.unitMemoryAt(0, 1, 35)[static_cast<int>(MemoryRole::ParamGathered)], 0);
  EXPECT_EQ(rec.unitMemoryAt(0, 1, 35)[static_cast<int>(MemoryRole::ParamShard)], 1000);
  EXPECT_EQ(rec.unitMemoryAt(0, 0, 5)[static_cast<int>(MemoryRole::ParamShard)], 0);  // before anything
  // Assigning the optimizer's state to unit 1 moves nothing in the rank's totals.
  EXPECT_EQ(rec.unitMemoryAt(0, 1, 50)[static_cast<int>(MemoryRole::OptimizerState)], 500);
  EXPECT_EQ(rec.rank(0).current[static_cast<int>(MemoryRole::OptimizerState)], 500);
  EXPECT_EQ(rec.rank(0).memory.size(), 5u);  // the assignment adds no sample to the rank's lane
  EXPECT_EQ(rec.recordedUnits(), (std::vector<int32_t>{0, 1}));
}

TEST(EventGroups, StepTimesLeaveOutTheirPauses) {
  RunRecording rec(1);
  Event step;
  step.kind = EventKind::StepEnd;
  step.step = 0;
  step.beginNs = 1'000'000;
  step.endNs = 1'000'000 + 500'000'000;
  step.pausedNs = 480'000'000;
  rec.add(step);
  ASSERT_EQ(rec.stepSeconds(0).size(), 1u);
  EXPECT_NEAR(rec.stepSeconds(0)[0], 0.020, 1e-9);
}

TEST(EventGroups, AWaitingMarkIsNotAGroupOfTheRecording) {
  RunRecording rec(1);
  rec.add(group(0, 100, 0, GroupKind::Forward, "forward root"));  // "waiting now": a status, not history
  rec.add(group(0, 100, 900, GroupKind::Forward, "forward root"));
  ASSERT_EQ(rec.rank(0).groups.size(), 1u);
  EXPECT_EQ(rec.rank(0).groups[0].endNs, 900);
}

// A paused group reaches the controller when its pause ends, as a control event the recorder may
// send after the next group's data event: the recording keeps them in the order the rank entered
// them (the step gate test saw "all_gather blocks.2" before the paused "reshard blocks.1").
TEST(EventGroups, APausedGroupThatArrivesLateTakesItsPlace) {
  RunRecording rec(1);
  rec.add(group(0, 100, 100, GroupKind::Forward, "forward blocks.1"));
  rec.add(group(0, 9000, 9000, GroupKind::Collective, "all_gather blocks.2"));  // sent first
  rec.add(group(0, 200, 8900, GroupKind::Reshard, "reshard blocks.1"));         // paused 200..8900
  const auto& groups = rec.rank(0).groups;
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].text(), "forward blocks.1");
  EXPECT_EQ(groups[1].text(), "reshard blocks.1");
  EXPECT_EQ(groups[2].text(), "all_gather blocks.2");
  ASSERT_EQ(rec.rank(0).pauses.size(), 1u);
}

TEST(EventGroups, ASavedTraceKeepsGroupsPausesAndUnits) {
  RunRecording rec(2);
  for (int r = 0; r < 2; ++r) {
    rec.add(group(r, 1000, 1000, GroupKind::StepStart, "step start"));
    rec.add(memory(r, 2000, 4096, MemoryRole::ParamShard, 0));
    rec.add(group(r, 3000, 3'003'000, GroupKind::Collective, "all_gather blocks.0"));  // paused 3 ms
    rec.add(memory(r, 3'004'000, 8192, MemoryRole::ParamGathered, 0));
    Event step;
    step.kind = EventKind::StepEnd;
    step.rank = r;
    step.step = 0;
    step.beginNs = 1000;
    step.endNs = 5'000'000;
    step.pausedNs = 3'000'000;
    rec.add(step);
    Event span;
    span.kind = EventKind::Compute;
    span.rank = r;
    span.step = 0;
    span.op = static_cast<uint8_t>(ComputeKind::Step);
    span.beginNs = 1000;
    span.endNs = 5'000'000;
    rec.add(span);
  }
  const std::string path = testing::freshTempDir("event_groups") + "/trace.json";
  {
    std::ofstream out(path);
    writeChromeTrace(out, rec, nlohmann::json::object());
  }
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& back = loaded.recording;
  ASSERT_EQ(back.ranks(), 2);
  ASSERT_EQ(back.rank(1).groups.size(), 2u);
  EXPECT_EQ(back.rank(1).groups[1].text(), "all_gather blocks.0");
  EXPECT_EQ(static_cast<GroupKind>(back.rank(1).groups[1].op), GroupKind::Collective);
  EXPECT_NEAR(static_cast<double>(back.rank(1).groups[1].endNs - back.rank(1).groups[1].beginNs), 3e6, 2.0);
  const int64_t late = back.originNs() + 4'500'000;
  EXPECT_EQ(back.unitMemoryAt(1, 0, late)[static_cast<int>(MemoryRole::ParamGathered)], 8192);
  EXPECT_EQ(back.unitMemoryAt(1, 0, late)[static_cast<int>(MemoryRole::ParamShard)], 4096);
  ASSERT_EQ(back.stepSeconds(0).size(), 1u);
  EXPECT_NEAR(back.stepSeconds(0)[0], 0.002, 1e-5);  // 5 ms less the 3 ms pause
}

}  // namespace
}  // namespace shardscope::trace
