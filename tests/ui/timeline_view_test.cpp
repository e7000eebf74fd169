// The timeline against the retained model, in a headless ImGui context: it culls to the visible
// window, folds what is too narrow to see, and reads exact bytes per role at a time.
#include "ui/timeline_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "ui/headless_frame.h"
#include "ui/item_probe.h"
#include "ui/rank_rows.h"
#include "ui/timeline_lanes.h"
#include "ui/synthetic_recording.h"
#include "trace/format.h"

namespace shardscope::ui {
namespace {

TimelineFrameStats drawOnce(HeadlessImGui& imgui, const trace::RunRecording& rec, TimeAxis& axis,
                            CollectiveSelection& selection, float mouseX = -1, float mouseY = -1) {
  TimelineFrameStats stats;
  TimelineCursor cursor;
  TimelineStyle style;
  imgui.frame(
      [&] {
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImVec2(1200, 900));
        ImGui::Begin("t");
        drawTimeline("tl", rec, axis, 64.0 * (1 << 20), 1180, style, selection, cursor, &stats);
        ImGui::End();
      },
      mouseX, mouseY);
  return stats;
}

TEST(TimelineView, FoldsWhatIsNarrowerThanAPixelAndCullsWhatIsOffscreen) {
  HeadlessImGui imgui(1200, 900);
  const auto rec = syntheticRecording(4, 100000);
  size_t spans = 0;
  for (int r = 0; r < rec.ranks(); ++r) spans += rec.rank(r).compute.size() + rec.rank(r).collectives.size();
  TimeAxis axis;
  double end = 0;
  for (int r = 0; r < rec.ranks(); ++r) end = std::max<double>(end, rec.rank(r).compute.back().endNs - rec.originNs());
  axis.fit(0, end);
  CollectiveSelection selection;
  auto whole = drawOnce(imgui, rec, axis, selection);
  EXPECT_LT(whole.spansDrawn, 100) << "at full view spans are far narrower than a pixel";
  EXPECT_EQ(static_cast<size_t>(whole.spansDrawn + whole.spansFolded), spans) << "every span is drawn or folded";
  EXPECT_LE(whole.memoryColumns, 4 * 1200);

  axis.beginNs = end * 0.5;
  axis.endNs = axis.beginNs + 200'000;  // 200 us: a handful of spans per lane
  auto zoomed = drawOnce(imgui, rec, axis, selection);
  EXPECT_GT(zoomed.spansDrawn, 0);
  EXPECT_EQ(zoomed.spansFolded, 0);
  EXPECT_LT(static_cast<size_t>(zoomed.spansDrawn), spans / 100) << "offscreen spans are culled";
}

// Under gradient accumulation a step all-gathers a unit once per micro-batch, with the same op,
// step, phase and unit. Clicking one highlights it on every rank, not its twins in other
// micro-batches.
TEST(TimelineView, ClickHighlightsOneMicroBatchsCollectiveOnEveryRank) {
  trace::RunRecording rec(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (int micro = 1; micro <= 2; ++micro) {
      trace::Event e;
      e.kind = trace::EventKind::Collective;
      e.rank = rank;
      e.step = 0;
      e.microBatch = micro;
      e.op = static_cast<uint8_t>(trace::CollectiveOp::AllGather);
      e.phase = static_cast<uint8_t>(trace::Phase::Forward);
      e.text = "blocks.0";
      e.issueNs = e.beginNs = micro * 2'000'000;
      e.endNs = e.beginNs + 1'000'000;
      e.bytes = 1 << 20;
      e.bytesOut = 2 << 20;
      e.worldSize = 2;
      rec.add(e);
    }
  }
  TimeAxis axis;
  axis.fit(0, 5'000'000);
  CollectiveSelection selection;
  TimelineCursor cursor;
  TimelineStyle style;
  auto draw = [&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(1200, 900));
    // No title bar: two quick clicks on one would collapse the window.
    ImGui::Begin("t", nullptr, ImGuiWindowFlags_NoTitleBar);
    drawTimeline("tl", rec, axis, 64.0 * (1 << 20), 1180, style, selection, cursor);
    ImGui::End();
  };
  HeadlessImGui imgui(1200, 900);
  imgui.frame(draw);
  // The middle of micro-batch 2's span (times are drawn from the recording's origin). The window's
  // content starts at its padding; the lanes start after the 64-pixel rank labels.
  const float x = static_cast<float>(
      axis.toX(4'500'000.0 - rec.originNs(), ImGui::GetStyle().WindowPadding.x + 64.0f, 1180 - 64.0f));
  for (float y = 0; y < 900 && !selection.active; y += 3) imgui.click(draw, x, y);
  ASSERT_TRUE(selection.active) << "no collective found to click at x=" << x;
  EXPECT_EQ(selection.microBatch, 2);
  EXPECT_EQ(selection.unit, "blocks.0");
  const auto stats = drawOnce(imgui, rec, axis, selection);
  EXPECT_EQ(stats.spansHighlighted, 2) << "micro-batch 2's all-gather on each of the 2 ranks, not micro-batch 1's";
}

// The vertices drawStepMarkers adds for `count` steps evenly over a 1000 px axis.
int stepMarkerVertices(HeadlessImGui& imgui, int count) {
  std::vector<trace::Event> steps(static_cast<size_t>(count));
  for (int s = 0; s < count; ++s) {
    steps[static_cast<size_t>(s)].step = s;
    steps[static_cast<size_t>(s)].beginNs = 1000 + static_cast<int64_t>(s) * 1000000;  // 1 ms apart
  }
  TimeAxis axis;
  axis.fit(0, 1e6 * count);
  int added = 0;
  imgui.frame([&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(1200, 900));
    ImGui::Begin("markers");
    LaneFrame f;
    f.drawList = ImGui::GetWindowDrawList();
    f.axis = &axis;
    f.x0 = 100;
    f.width = 1000;
    f.originNs = 1000;
    f.beginAbs = 1000 + axis.beginNs;
    f.endAbs = 1000 + axis.endNs;
    const int before = f.drawList->VtxBuffer.Size;
    drawStepMarkers(f, steps, 10, 200);
    added = f.drawList->VtxBuffer.Size - before;
    ImGui::End();
  });
  return added;
}

// A long run's whole view puts many steps in a pixel: one marker every few pixels and labels that
// do not overlap, not a line and a label per step (15,000 of them washed the lanes white).
TEST(TimelineView, StepMarkersThinOutWhereStepsCrowd) {
  HeadlessImGui imgui(1200, 900);
  const int few = stepMarkerVertices(imgui, 20);
  EXPECT_GE(few, 20 * 4 + 20 * 2 * 4) << "20 steps over 1000 px: every line and label (s0..s19)";
  const int many = stepMarkerVertices(imgui, 15000);
  EXPECT_LT(many, 1000 / 4 * 4 + 1000 * 4) << "at most a line per 4 px and labels side by side";
  EXPECT_GT(many, few);
}

TEST(TimelineView, MemoryAtReturnsTheSampleInForce) {
  trace::RunRecording rec(1);
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.beginNs = 1000;
  e.role = static_cast<uint8_t>(trace::MemoryRole::ParamGathered);
  e.bytes = 4096;
  rec.add(e);
  e.beginNs = 3000;
  e.bytes = -4096;
  rec.add(e);
  const int gathered = static_cast<int>(trace::MemoryRole::ParamGathered);
  EXPECT_EQ(memoryAt(rec, 0, -1)[gathered], 0);
  EXPECT_EQ(memoryAt(rec, 0, 0)[gathered], 4096);
  EXPECT_EQ(memoryAt(rec, 0, 1999)[gathered], 4096);
  EXPECT_EQ(memoryAt(rec, 0, 2000)[gathered], 0);
}

// A job past 8 ranks folds into at most 8 rows, each a measured rank (its group's highest peak);
// a click on a group's label shows its ranks one by one, and rows off screen are not drawn.
TEST(TimelineView, SixtyFourRanksFoldIntoEightRowsAndAClickExpandsOne) {
  auto rec = syntheticRecording(64, 2000);
  trace::Event big;  // rank 11 holds the most of ranks 8-15
  big.kind = trace::EventKind::Memory;
  big.rank = 11;
  big.beginNs = rec.originNs() + 1000;
  big.role = static_cast<uint8_t>(trace::MemoryRole::Other);
  big.bytes = 1 << 30;
  rec.add(big);
  big.beginNs += 1000;
  big.bytes = -(1 << 30);
  rec.add(big);

  EXPECT_EQ(rankGroupSize(8), 1);
  EXPECT_EQ(rankGroupSize(9), 2);
  EXPECT_EQ(rankGroupSize(64), 8);
  auto rows = rankRows(rec, {});
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_TRUE(rows[1].folded);
  EXPECT_EQ(rows[1].groupFirst, 8);
  EXPECT_EQ(rows[1].groupCount, 8);
  EXPECT_EQ(rows[1].rank, 11) << "the group's highest peak is drawn";
  rows = rankRows(rec, {1});
  ASSERT_EQ(rows.size(), 15u);
  EXPECT_TRUE(rows[1].groupHead);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rows[static_cast<size_t>(1 + i)].rank, 8 + i);
  EXPECT_EQ(rankRows(syntheticRecording(9, 100), {}).size(), 5u) << "groups of 2, the last of one rank";
  // A PyTorch job's traces of 2 of its 128 ranks: the other groups recorded nothing, not idled.
  trace::RunRecording sampled(128);
  big.rank = 1;
  sampled.add(big);
  EXPECT_EQ(ranksWithRecords(sampled, 0, 16), 1);
  EXPECT_EQ(ranksWithRecords(sampled, 16, 16), 0);
  EXPECT_EQ(ranksWithRecords(rec, 8, 8), 8);

  TimeAxis axis;
  axis.fit(0, 1e7);
  CollectiveSelection selection;
  TimelineCursor cursor;
  TimelineStyle style;
  std::set<int> expanded;
  TimelineFrameStats stats;
  float height = 0;
  auto draw = [&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(1200, 600));
    ImGui::Begin("t", nullptr, ImGuiWindowFlags_NoTitleBar);
    height = drawTimeline("tl", rec, axis, 2.0 * (1 << 30), 1180, style, selection, cursor, &stats, -1, &expanded);
    ImGui::End();
  };
  HeadlessImGui imgui(1200, 600);
  imgui.frame(draw);
  // Rows of 116 px below an 18-px ruler: the sixth starts below the 600-px window.
  EXPECT_EQ(stats.rowsDrawn, 5) << "rows below the window are culled";
  const float rowHeight = style.memoryLaneHeight + 2 * style.spanLaneHeight + 10.0f;
  const float ruler = ImGui::GetFontSize() + 5.0f;
  EXPECT_FLOAT_EQ(height, 8 * rowHeight + ruler);
  // The label of the second row (ranks 8-15), below the padding and the ruler.
  const float y = ImGui::GetStyle().WindowPadding.y + ruler + rowHeight + 8.0f;
  imgui.click(draw, ImGui::GetStyle().WindowPadding.x + 12.0f, y);
  EXPECT_EQ(expanded, std::set<int>{1});
  imgui.frame(draw);
  EXPECT_FLOAT_EQ(height, 15 * rowHeight + ruler);
  EXPECT_EQ(stats.rowsDrawn, 5) << "15 rows now, as many drawn";
  imgui.click(draw, ImGui::GetStyle().WindowPadding.x + 12.0f, y);
  EXPECT_TRUE(expanded.empty()) << "the group's head folds it again";
}

// One frame of `rec`'s timeline, 1180 px wide over its first 10 us, with `style`: its height, what
// it drew (`stats`), and where its lane labels went (`probe`, added to).
float drawProbedFrame(const trace::RunRecording& rec, const TimelineStyle& style, double memoryScale,
                      std::map<std::string, ItemRect>& probe, TimelineFrameStats& stats) {
  TimeAxis axis;
  axis.fit(0, 1e4);
  CollectiveSelection selection;
  TimelineCursor cursor;
  float height = 0;
  HeadlessImGui imgui(1200, 800);
  setItemProbe(&probe);
  imgui.frame([&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(1200, 800));
    ImGui::Begin("t");
    height = drawTimeline("tl", rec, axis, memoryScale, 1180, style, selection, cursor, &stats);
    ImGui::End();
  });
  setItemProbe(nullptr);
  return height;
}

// A PyTorch job opened with the traces of ranks 3 and 5 of 8: their rows, and one line for the six
// ranks whose traces were not given, instead of six empty rows (a session of shardscope's own run
// keeps a row per rank: its ranks may not have reported yet).
TEST(TimelineView, RanksWithoutATraceShareOneLine) {
  trace::RunRecording rec(8);
  for (int r : {3, 5}) {
    trace::Event e;
    e.kind = trace::EventKind::Memory;
    e.rank = r;
    e.beginNs = 1000;
    e.role = static_cast<uint8_t>(trace::MemoryRole::ParamShard);
    e.bytes = 1 << 20;
    rec.add(e);
  }
  EXPECT_EQ(rankRows(rec, {}).size(), 8u) << "not folded unless asked";
  const auto rows = rankRows(rec, {}, /*foldUnrecorded=*/true);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rank, 3);
  EXPECT_EQ(rows[1].rank, 5);
  EXPECT_EQ(rows[2].missingRanks, trace::formatRanks({0, 1, 2, 4, 6, 7}));
  EXPECT_EQ(rankRows(trace::RunRecording(8), {}, true).size(), 8u) << "nothing recorded at all: nothing to fold";

  TimelineStyle style;
  style.foldRanksWithoutRecords = true;
  std::map<std::string, ItemRect> probe;
  TimelineFrameStats stats;
  const float height = drawProbedFrame(rec, style, 2.0 * (1 << 20), probe, stats);
  EXPECT_EQ(stats.rowsDrawn, 2);
  const float rowHeight = style.memoryLaneHeight + 2 * style.spanLaneHeight + 10.0f;
  EXPECT_LT(height, 3 * rowHeight) << "the line is one line high, not a rank's row";
  const std::string line = "ranks " + trace::formatRanks({0, 1, 2, 4, 6, 7}) + ": no trace given";
  EXPECT_TRUE(std::any_of(probe.begin(), probe.end(), [&](const auto& p) {
    return p.first.rfind("lane-text:missing@", 0) == 0 && p.first.find(line) != std::string::npos;
  })) << line;
}

// A PyTorch job traced without profile_memory: each rank's memory lane is one thin line saying so,
// and its compute and comm lanes are drawn as before.
TEST(TimelineView, AJobWithoutMemoryEventsSaysSoInAThinLane) {
  trace::RunRecording rec(2);
  for (int r : {0, 1}) {
    trace::Event e;
    e.kind = trace::EventKind::Compute;
    e.rank = r;
    e.op = static_cast<uint8_t>(trace::ComputeKind::Forward);
    e.beginNs = 1000;
    e.endNs = 5000;
    rec.add(e);
  }
  EXPECT_FALSE(recordsMemory(rec));
  TimelineStyle style;
  std::map<std::string, ItemRect> probe;
  TimelineFrameStats stats;
  const float full = drawProbedFrame(rec, style, 1e6, probe, stats);
  style.memoryNotRecorded = true;
  style.memoryLaneHeight = 2 * 13.0f + 4.0f;
  const float thin = drawProbedFrame(rec, style, 1e6, probe, stats);
  EXPECT_LT(thin, full - 2 * 30.0f) << "both memory lanes shrink";
  EXPECT_EQ(std::count_if(probe.begin(), probe.end(),
                          [](const auto& p) { return p.first.rfind("lane-text:no-memory@", 0) == 0; }),
            2)
      << "one note per rank";
  EXPECT_GT(stats.spansDrawn, 0) << "the compute lanes are still drawn";
}

TEST(TimelineView, AxisZoomKeepsTheAnchorAndPans) {
  TimeAxis axis;
  axis.fit(0, 1e9);
  const double anchor = 3e8;
  const double before = (anchor - axis.beginNs) / (axis.endNs - axis.beginNs);
  axis.zoom(anchor, 2.0f);
  EXPECT_NEAR((anchor - axis.beginNs) / (axis.endNs - axis.beginNs), before, 1e-9);
  EXPECT_LT(axis.endNs - axis.beginNs, 1e9);
  const double span = axis.endNs - axis.beginNs;
  axis.pan(1e6);
  EXPECT_NEAR(axis.endNs - axis.beginNs, span, 1e-3);
  EXPECT_TRUE(axis.userMoved);
}

// --offload cpu: a rank with host memory gets a lane of its own under the device's (the timeline
// grows by it, and its columns are drawn), and the copies to and from the device are drawn over the
// compute lane even where a forward span covers the same time, as on the communication stream.
TEST(TimelineView, HostMemoryGetsItsOwnLaneAndCopiesAndPinningAreDrawnOverCompute) {
  auto add = [](trace::RunRecording& rec, trace::EventKind kind, uint8_t op, int64_t begin, int64_t end,
                trace::MemorySpace space = trace::MemorySpace::Device) {
    trace::Event e;
    e.kind = kind;
    e.op = op;
    e.beginNs = begin;
    e.endNs = end;
    e.text = "blocks.0";
    e.role = static_cast<uint8_t>(trace::MemoryRole::ParamShard);
    e.bytes = 1 << 20;
    e.space = static_cast<uint8_t>(space);
    rec.add(e);
  };
  const uint8_t forward = static_cast<uint8_t>(trace::ComputeKind::Forward);
  const uint8_t toDevice = static_cast<uint8_t>(trace::ComputeKind::CopyToDevice);
  trace::RunRecording plain(1), offloaded(1);
  for (trace::RunRecording* rec : {&plain, &offloaded}) {
    add(*rec, trace::EventKind::Memory, 0, 1'000'000, 0);
    add(*rec, trace::EventKind::Compute, forward, 1'000'000, 4'000'000);
  }
  add(offloaded, trace::EventKind::Memory, 0, 1'500'000, 0, trace::MemorySpace::Host);
  add(offloaded, trace::EventKind::Compute, toDevice, 2'000'000, 3'000'000);  // under the forward span
  add(offloaded, trace::EventKind::Compute, static_cast<uint8_t>(trace::ComputeKind::PinHostMemory), 1'200'000,
      1'800'000);  // on the host, under the forward too
  EXPECT_TRUE(recordsHostMemory(offloaded));
  EXPECT_FALSE(recordsHostMemory(plain));

  HeadlessImGui imgui(1200, 900);
  TimeAxis axis;
  axis.fit(0, 5'000'000);
  CollectiveSelection selection;
  TimelineStyle style;
  EXPECT_EQ(hostLaneHeight(plain, style), 0.0f);
  EXPECT_EQ(hostLaneHeight(offloaded, style), std::round(style.memoryLaneHeight * kHostLaneShare));
  const auto before = drawOnce(imgui, plain, axis, selection);
  const auto after = drawOnce(imgui, offloaded, axis, selection);
  EXPECT_GT(after.memoryColumns, before.memoryColumns) << "the host lane's columns";
  EXPECT_EQ(after.spansDrawn, before.spansDrawn + 2)
      << "the copy and the pinning, drawn beside the forward they overlap";
}

// Where the labels drawn onto the lanes of `rec` went, at `width`, with a capacity far above the
// lanes' scale (its note at the top).
std::vector<std::pair<std::string, ItemRect>> laneTexts(const trace::RunRecording& rec, float width) {
  TimeAxis axis;
  axis.fit(0, 6'100'000);
  CollectiveSelection selection;
  TimelineCursor cursor;
  TimelineStyle style;
  style.capacityBytes = 80e9;
  std::map<std::string, ItemRect> probe;
  HeadlessImGui imgui(1200, 2400);
  setItemProbe(&probe);
  imgui.frame([&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(1200, 2400));
    ImGui::Begin("t");
    drawTimeline("tl", rec, axis, 2.0 * (1 << 20), width, style, selection, cursor);
    ImGui::End();
  });
  setItemProbe(nullptr);
  std::vector<std::pair<std::string, ItemRect>> texts;
  for (const auto& [name, rect] : probe) {
    if (name.rfind("lane-text:", 0) == 0) texts.emplace_back(name, rect);
  }
  return texts;
}

size_t countOf(const std::vector<std::pair<std::string, ItemRect>>& texts, const std::string& kind) {
  return static_cast<size_t>(std::count_if(texts.begin(), texts.end(),
                                           [&](const auto& t) { return t.first.rfind("lane-text:" + kind, 0) == 0; }));
}

void expectNoneOverlap(const std::vector<std::pair<std::string, ItemRect>>& texts) {
  for (size_t i = 0; i < texts.size(); ++i) {
    for (size_t j = i + 1; j < texts.size(); ++j) {
      const ItemRect& a = texts[i].second;
      const ItemRect& b = texts[j].second;
      const bool apart = a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0;
      EXPECT_TRUE(apart) << texts[i].first << " runs over " << texts[j].first;
    }
  }
}

// `ranks` ranks (the first `recording` of them with anything), 6 steps each with some memory.
trace::RunRecording steppedRecording(int ranks, int recording) {
  trace::RunRecording rec(ranks);
  for (int r = 0; r < recording; ++r) {
    for (int s = 0; s < 6; ++s) {
      trace::Event step;
      step.kind = trace::EventKind::StepEnd;
      step.rank = r;
      step.step = s;
      step.beginNs = 100'000 + s * 1'000'000;
      step.endNs = step.beginNs + 1'000'000;
      rec.add(step);
      trace::Event memory;
      memory.kind = trace::EventKind::Memory;
      memory.rank = r;
      memory.role = static_cast<uint8_t>(trace::MemoryRole::Activation);
      memory.beginNs = step.beginNs + 500'000;
      memory.bytes = (s % 2 + 1) << 20;
      rec.add(memory);
    }
  }
  return rec;
}

// The memory lane's top line is the step markers' ("s0", "s1", ...): the capacity note and the peak's
// figure keep below it, a narrow lane puts the capacity note a line below the peak's figure, and a
// folded group's note sits at the lane's foot: nothing drawn onto the lanes runs over anything else
// (at a projector's scale the capacity note ran through the first steps' labels and the peak
// through the last's).
TEST(TimelineView, LaneLabelsKeepClearOfTheStepMarkers) {
  const auto one = steppedRecording(1, 1);
  const auto wide = laneTexts(one, 1180);
  EXPECT_EQ(countOf(wide, "step"), 6u) << "s0..s5 all have room at 1180 px";
  EXPECT_EQ(countOf(wide, "capacity"), 1u);
  EXPECT_EQ(countOf(wide, "peak"), 1u);
  expectNoneOverlap(wide);
  const auto narrow = laneTexts(one, 520);
  EXPECT_EQ(countOf(narrow, "capacity"), 1u);
  EXPECT_EQ(countOf(narrow, "peak"), 1u);
  expectNoneOverlap(narrow);
  // 16 ranks fold in pairs; ranks 4 to 15 recorded nothing (a PyTorch job traced on 4 ranks).
  const auto folded = laneTexts(steppedRecording(16, 4), 1180);
  EXPECT_EQ(countOf(folded, "folded"), 8u);
  expectNoneOverlap(folded);
}

// A drag moves the view by whole pixels of the lane (whole memory columns, so those still in view
// are kept); the parts of a pixel a slow drag on a fractional-pixel display makes add up.
TEST(TimelineView, ADragMovesTheViewByWholePixelsAndKeepsTheRest) {
  TimeAxis axis;
  axis.beginNs = 0;
  axis.endNs = 1000;  // 10 ns a pixel over 100 pixels
  axis.drag(-3.0f, 100.0f);
  EXPECT_DOUBLE_EQ(axis.beginNs, 30.0) << "dragged left by 3 pixels: the view moves 3 pixels later";
  EXPECT_DOUBLE_EQ(axis.endNs - axis.beginNs, 1000.0);
  for (int i = 0; i < 3; ++i) axis.drag(0.25f, 100.0f);
  EXPECT_DOUBLE_EQ(axis.beginNs, 20.0) << "three quarter-pixels: one pixel, rounded";
  axis.drag(0.25f, 100.0f);
  EXPECT_DOUBLE_EQ(axis.beginNs, 20.0) << "the fourth completes that pixel: nothing more yet";
  EXPECT_TRUE(axis.userMoved);
}

}  // namespace
}  // namespace shardscope::ui
