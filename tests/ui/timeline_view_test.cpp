// The timeline against the retained model, in a headless ImGui context: it culls to the visible
// window, folds what is too narrow to see, and reads exact bytes per role at a time.
#include "ui/timeline_view.h"

#include <gtest/gtest.h>

#include "ui/headless_frame.h"
#include "ui/synthetic_recording.h"

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
  axis.fit(end);
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

TEST(TimelineView, AxisZoomKeepsTheAnchorAndPans) {
  TimeAxis axis;
  axis.fit(1e9);
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

}  // namespace
}  // namespace shardscope::ui
