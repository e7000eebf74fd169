// Projector mode as a teacher uses it: Ctrl +/- rasterise the TrueType font again at the new size,
// lanes keep a readable height and the sessions scroll instead of shrinking, each session can be
// scaled to its own peak, one session can fill the window, and a high-contrast palette.
#include <gtest/gtest.h>

#include <string>

#include "tests/ui/app_driver.h"
#include "ui/app_window.h"
#include "ui/key_codes.h"
#include "ui/synthetic_recording.h"
#include "ui/theme.h"
#include "tests/support/mode_of.h"

namespace shardscope::ui {
namespace {

class Projector : public ::testing::Test {
 protected:
  void addSession(const std::string& strategy, int ranks, int units) {
    Session s;
    s.config.strategy = testing::modeOf<config::StrategyKind>(strategy);
    s.title = strategy;
    s.status = SessionStatus::Done;
    s.recording = syntheticRecording(ranks, 2000, units);
    auto lock = store_.lock();
    store_.add(std::move(s));
  }
  // Draws until ImGui's layout has settled (child windows learn their content size a frame late).
  void settle() {
    for (int i = 0; i < 3; ++i) app_.draw();
  }
  // What ImGui::NewFrame would see now: the platform layer re-applies the look between frames.
  void applyRequestedLook() { applyLook(state_.display.look); }

  SessionStore store_;
  AppState state_;
  AppDriver app_{store_, state_, 1920, 1080};
};

TEST_F(Projector, ScaleRasterisesTheTrueTypeFontAtTheNewSize) {
  const std::string file = applyLook(Look{1.0f, false});
  ASSERT_NE(file.find("DejaVuSansMono.ttf"), std::string::npos)
      << "fonts-dejavu-core is installed by scripts/setup.sh; found '" << file << "'";
  ImFont* one = ImGui::GetIO().Fonts->Fonts[0];
  const float sizeAtOne = one->FontSize, advanceAtOne = one->FindGlyph('M')->AdvanceX;
  const int atlasAtOne = ImGui::GetIO().Fonts->TexHeight;

  applyLook(Look{2.0f, false});
  ImFont* two = ImGui::GetIO().Fonts->Fonts[0];
  EXPECT_FLOAT_EQ(sizeAtOne, kBaseFontPixels);
  EXPECT_FLOAT_EQ(two->FontSize, 2 * kBaseFontPixels) << "rasterised at the scale";
  EXPECT_FLOAT_EQ(ImGui::GetIO().FontGlobalScale, 1.0f) << "not a bitmap stretched at draw time";
  EXPECT_NEAR(two->FindGlyph('M')->AdvanceX, 2 * advanceAtOne, 1.0f);
  EXPECT_GT(ImGui::GetIO().Fonts->TexHeight, atlasAtOne) << "larger glyphs need a larger atlas";
  EXPECT_FLOAT_EQ(px(10), 20.0f) << "fixed sizes follow the scale";
  applyLook(Look{});
}

TEST_F(Projector, CtrlPlusMinusAndZeroStepTheScaleWithinItsRange) {
  addSession("full_shard", 2, 4);
  settle();
  app_.pressKey(keys::kEqual, /*ctrl=*/true);
  EXPECT_FLOAT_EQ(state_.display.look.scale, 1.25f);
  app_.pressKey(keys::kEqual, /*ctrl=*/false);
  EXPECT_FLOAT_EQ(state_.display.look.scale, 1.25f) << "'=' alone is not a shortcut";
  for (int i = 0; i < 20; ++i) app_.pressKey(keys::kEqual, true);
  EXPECT_FLOAT_EQ(state_.display.look.scale, kMaxUiScale);
  for (int i = 0; i < 20; ++i) app_.pressKey(keys::kMinus, true);
  EXPECT_FLOAT_EQ(state_.display.look.scale, kMinUiScale);
  app_.pressKey(keys::kZero, true);
  EXPECT_FLOAT_EQ(state_.display.look.scale, 1.0f);
  // The sidebar's buttons do the same.
  app_.clickOn("display:larger");
  EXPECT_FLOAT_EQ(state_.display.look.scale, 1.25f);
}

TEST_F(Projector, LanesKeepAReadableHeightAndTheSessionsScrollInstead) {
  addSession("ddp", 2, 4);
  settle();
  EXPECT_FALSE(state_.timelinesScroll) << "one session of two ranks fits";
  EXPECT_GT(state_.lastMemoryLaneHeight, 100.0f) << "and gets the room";

  for (const char* s : {"zero1", "shard_grad_op", "full_shard"}) addSession(s, 4, 4);
  settle();
  EXPECT_GE(state_.lastMemoryLaneHeight, 56.0f) << "four strategies do not squash the lanes";
  EXPECT_TRUE(state_.timelinesScroll) << "they scroll instead";
  EXPECT_EQ(state_.timelinesScrollY, 0.0f);
  app_.pressKey(keys::kPageDown);
  app_.draw();
  EXPECT_GT(state_.timelinesScrollY, 0.0f) << "PageDown pages through the sessions";

  state_.display.look.scale = 2.0f;
  applyRequestedLook();
  settle();
  EXPECT_GE(state_.lastMemoryLaneHeight, 112.0f) << "the minimum grows with the scale";
  EXPECT_FLOAT_EQ(state_.style.spanLaneHeight, ImGui::GetFontSize() + px(5)) << "span lanes fit their text";
  applyLook(Look{});
}

TEST_F(Projector, OwnScaleTakesEachSessionUpToItsOwnPeak) {
  addSession("ddp", 2, 8);
  addSession("full_shard", 2, 2);
  auto peakOf = [&](size_t i) {
    auto lock = store_.lock();
    const auto& rec = store_.sessions()[i].recording;
    double peak = 0;
    for (int r = 0; r < rec.ranks(); ++r) peak = std::max(peak, static_cast<double>(rec.rank(r).peakTotal));
    return peak;
  };
  ASSERT_NE(peakOf(0), peakOf(1)) << "the test needs two different peaks";
  settle();
  ASSERT_EQ(state_.lastMemoryScales.size(), 2u);
  EXPECT_DOUBLE_EQ(state_.lastMemoryScales[0], state_.lastMemoryScales[1]) << "shared by default";
  EXPECT_DOUBLE_EQ(state_.lastMemoryScales[0], 1.1 * std::max(peakOf(0), peakOf(1)));
  app_.pressKey(keys::kS);
  EXPECT_TRUE(state_.display.ownMemoryScale);
  EXPECT_DOUBLE_EQ(state_.lastMemoryScales[0], 1.1 * peakOf(0));
  EXPECT_DOUBLE_EQ(state_.lastMemoryScales[1], 1.1 * peakOf(1));
  app_.pressKey(keys::kS);
  EXPECT_DOUBLE_EQ(state_.lastMemoryScales[0], state_.lastMemoryScales[1]) << "S again: shared";
}

TEST_F(Projector, FocusShowsThePlayheadsSessionAloneUntilFOrEscape) {
  addSession("ddp", 2, 4);
  addSession("full_shard", 2, 4);
  state_.playhead.session = 1;
  settle();
  ASSERT_TRUE(app_.items().count("display:focus"));
  ASSERT_TRUE(app_.items().count("tab:Estimate"));
  app_.pressKey(keys::kF);
  EXPECT_EQ(state_.display.focusSession, 1);
  EXPECT_FALSE(app_.items().count("display:focus")) << "the sidebar gives its room";
  EXPECT_FALSE(app_.items().count("tab:Estimate")) << "so do the tabs";
  app_.pressKey(keys::kEscape);
  EXPECT_EQ(state_.display.focusSession, -1);
  EXPECT_TRUE(app_.items().count("tab:Estimate"));
  app_.pressKey(keys::kF);
  app_.pressKey(keys::kF);
  EXPECT_EQ(state_.display.focusSession, -1) << "F toggles";
}

// W, the stragglers view: with rank 1 issuing 10 all-reduces 200 us after rank 0, rank 1's are
// marked as the last and rank 0's waits hatched; off (the default), neither is drawn.
TEST_F(Projector, WMarksEachCollectivesLastRankAndHatchesTheOthersWait) {
  Session s;
  s.title = "ddp";
  s.status = SessionStatus::Done;
  s.recording = syntheticRecording(2, 400, 2);
  // After the synthetic run's own collectives, so that every rank issues them in one order.
  const int64_t base = s.recording.rank(0).collectives.back().endNs + 1'000'000;
  for (int k = 0; k < 10; ++k) {
    for (int r = 0; r < 2; ++r) {
      trace::Event e;
      e.kind = trace::EventKind::Collective;
      e.op = static_cast<uint8_t>(trace::CollectiveOp::AllReduce);
      e.rank = r;
      e.worldSize = 2;
      e.issueNs = e.beginNs = base + 400'000 * k + (r == 1 ? 200'000 : 0);
      e.endNs = base + 400'000 * k + 250'000;
      e.text = "bucket 0";
      s.recording.add(e);
    }
  }
  {
    auto lock = store_.lock();
    store_.add(std::move(s));
  }
  settle();
  EXPECT_EQ(state_.lastStats.waitsHatched + state_.lastStats.lastMarks, 0) << "off by default";
  ASSERT_TRUE(app_.items().count("display:stragglers"));
  app_.pressKey(keys::kW);
  settle();
  EXPECT_TRUE(state_.display.stragglers);
  EXPECT_GE(state_.lastStats.lastMarks, 10) << "rank 1's all-reduces, each clearly last";
  EXPECT_GE(state_.lastStats.waitsHatched, 10) << "rank 0's 200 us waits";
  app_.pressKey(keys::kW);
  settle();
  EXPECT_EQ(state_.lastStats.waitsHatched + state_.lastStats.lastMarks, 0) << "W again: off";
}

TEST_F(Projector, HighContrastPaletteIsBrighterOnBlack) {
  const ImU32 gathered = roleColor(trace::MemoryRole::ParamGathered);
  const ImU32 shard = roleColor(trace::MemoryRole::ParamShard);
  addSession("full_shard", 2, 4);
  settle();
  app_.pressKey(keys::kH);
  ASSERT_TRUE(state_.display.look.highContrast);
  applyRequestedLook();
  EXPECT_EQ(laneBackground(), IM_COL32(0, 0, 0, 255));
  EXPECT_EQ(ImGui::GetStyle().Colors[ImGuiCol_WindowBg].x, 0.0f);
  EXPECT_EQ(ImGui::GetStyle().Colors[ImGuiCol_Text].x, 1.0f);
  auto luminance = [](ImU32 c) {
    return 0.2126 * ((c >> IM_COL32_R_SHIFT) & 0xFF) + 0.7152 * ((c >> IM_COL32_G_SHIFT) & 0xFF) +
           0.0722 * ((c >> IM_COL32_B_SHIFT) & 0xFF);
  };
  EXPECT_GT(luminance(roleColor(trace::MemoryRole::ParamShard)), luminance(shard));
  EXPECT_GT(luminance(roleColor(trace::MemoryRole::ParamGathered)), luminance(gathered));
  EXPECT_NE(roleColor(trace::MemoryRole::ParamShard), roleColor(trace::MemoryRole::ParamGathered));
  applyLook(Look{});
}

}  // namespace
}  // namespace shardscope::ui
