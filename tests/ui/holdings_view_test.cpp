// "Who holds what" drawn headlessly over a recording made here: the cells it draws per rank and
// unit, and what they add up to.
#include "ui/holdings_view.h"

#include <gtest/gtest.h>

#include <imgui.h>

#include "ui/headless_frame.h"

namespace shardscope::ui {
namespace {

// Column labels shorten to what fits their cell, never wider: the full name, then its initial and
// index, then the index, then nothing.
TEST(HoldingsView, UnitLabelsShortenToFitTheirColumn) {
  HeadlessImGui imgui(1200, 900);
  imgui.frame([] {
    const auto width = [](const char* text) { return ImGui::CalcTextSize(text).x; };
    EXPECT_EQ(fittedUnitLabel("blocks.12", width("blocks.12")), "blocks.12");
    EXPECT_EQ(fittedUnitLabel("blocks.12", width("blocks.12") - 1), "b12");
    EXPECT_EQ(fittedUnitLabel("blocks.12", width("b12") - 1), "12");
    EXPECT_EQ(fittedUnitLabel("blocks.12", width("12") - 1), "");
    EXPECT_EQ(fittedUnitLabel("root", width("root")), "root");
    EXPECT_EQ(fittedUnitLabel("root", width("root") - 1), "") << "no index to fall back on";
  });
}

// --offload cpu in "who holds what": each rank gets a host row under its device row, a cell per
// unit with what the rank holds of it in host memory at the playhead; a run without offload none.
TEST(HoldingsView, OffloadedRanksGetAHostRowPerUnit) {
  auto memory = [](trace::RunRecording& rec, int rank, int32_t unit, trace::MemoryRole role, int64_t bytes,
                   trace::MemorySpace space) {
    trace::Event e;
    e.kind = trace::EventKind::Memory;
    e.rank = rank;
    e.beginNs = 1'000'000;
    e.unit = unit;
    e.role = static_cast<uint8_t>(role);
    e.bytes = bytes;
    e.space = static_cast<uint8_t>(space);
    rec.add(e);
  };
  Session plain, offloaded;
  plain.recording = trace::RunRecording(2);
  offloaded.recording = trace::RunRecording(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (int32_t unit : {-1, 0, 1}) {
      for (Session* s : {&plain, &offloaded}) {
        memory(s->recording, rank, unit, trace::MemoryRole::ParamGathered, 64, trace::MemorySpace::Device);
      }
      memory(offloaded.recording, rank, unit, trace::MemoryRole::ParamShard, 100, trace::MemorySpace::Host);
      memory(offloaded.recording, rank, unit, trace::MemoryRole::OptimizerState, 200, trace::MemorySpace::Host);
    }
  }
  HeadlessImGui imgui(1200, 900);
  auto draw = [&](const Session& s) {
    HoldingsFrameStats stats;
    imgui.frame([&] { drawHoldings(s, 2'000'000 - static_cast<double>(s.recording.originNs()), 1000, 600, &stats); });
    return stats;
  };
  const HoldingsFrameStats without = draw(plain), with = draw(offloaded);
  EXPECT_EQ(without.cells, 6);
  EXPECT_EQ(without.hostCells, 0);
  EXPECT_EQ(with.cells, 6);
  EXPECT_EQ(with.bytesShown, without.bytesShown) << "the device's cells are the device's alone";
  EXPECT_EQ(with.hostCells, 6) << "a host row per rank, a cell per unit";
  EXPECT_EQ(with.hostBytesShown, 2 * 3 * 300);
  EXPECT_TRUE(recordsHostMemoryPerUnit(offloaded.recording));
  EXPECT_FALSE(recordsHostMemoryPerUnit(plain.recording));
}

// Each row names the rank's places: its data and tensor rank within its stage, and its stages.
TEST(HoldingsView, RowsNameEachRanksPlacesAndStages) {
  config::RunConfig c;
  c.world = 4;
  c.tp = 2;
  EXPECT_EQ(rankRowLabel(2, c), "rank 2 d1 t0");
  c.pp = 2;
  c.schedule = config::PipelineSchedule::Interleaved1F1B;
  EXPECT_EQ(rankRowLabel(0, c), "rank 0 d0 t0 s0,2");
  EXPECT_EQ(rankRowLabel(3, c), "rank 3 d0 t1 s1,3") << "its data rank within its stage's ranks";
  c.tp = 1;
  c.world = 2;
  c.schedule = config::PipelineSchedule::OneFOneB;
  EXPECT_EQ(rankRowLabel(1, c), "rank 1 s1");
}

}  // namespace
}  // namespace shardscope::ui
