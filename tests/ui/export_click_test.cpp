// The Export tab driven as a user drives it: the whole app frame is built, the mouse clicks the
// "Export" tab and then each button where ImGui drew it, and the files appear on disk.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "tests/support/run_cli.h"
#include "ui/app_window.h"
#include "ui/headless_frame.h"
#include "ui/item_probe.h"
#include "ui/synthetic_recording.h"

namespace shardscope::ui {
namespace {

class ExportClicks : public ::testing::Test {
 protected:
  ExportClicks() : imgui_(1600, 900) { setItemProbe(&items_); }
  ~ExportClicks() override { setItemProbe(nullptr); }

  void addSession(const std::string& strategy) {
    Session s;
    s.config.strategy = strategy;
    s.title = strategy;
    s.status = SessionStatus::Done;
    s.recording = syntheticRecording(2, 2000, 4);
    auto lock = store_.lock();
    store_.add(std::move(s));
  }

  void draw() {
    imgui_.frame([&] { drawAppFrame(state_, store_, nullptr); });
  }

  // Clicks the control the app drew under `name` in the last frame.
  void clickOn(const std::string& name) {
    ASSERT_TRUE(items_.count(name)) << name << " was not drawn";
    const ItemRect r = items_.at(name);
    items_.clear();
    imgui_.click([&] { drawAppFrame(state_, store_, nullptr); }, r.centerX(), r.centerY());
    draw();  // a tab's selection shows from the next frame on
  }

  void openExportTab() {
    draw();
    draw();  // ImGui lays a tab bar out in its first frame and places it from the second
    clickOn("tab:Export");
    ASSERT_TRUE(items_.count("export:trace")) << "the Export tab did not open";
  }

  HeadlessImGui imgui_;
  std::map<std::string, ItemRect> items_;
  SessionStore store_;
  AppState state_;
};

bool exists(const std::string& path) { return std::ifstream(path).good(); }

TEST_F(ExportClicks, TraceAndCsvButtonsWriteOneFilePerStrategy) {
  const std::string base = testing::freshTempDir("export_click") + "/lesson";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  addSession("ddp");
  addSession("full_shard");
  openExportTab();
  EXPECT_FALSE(exists(base + ".ddp.json")) << "opening the tab writes nothing";

  clickOn("export:trace");
  for (const char* s : {"ddp", "full_shard"}) {
    EXPECT_TRUE(exists(base + "." + s + ".json")) << s;
    EXPECT_NE(state_.exportMessage.find("wrote " + base + "." + s + ".json"), std::string::npos)
        << state_.exportMessage;
  }
  EXPECT_FALSE(exists(base + ".ddp.csv")) << "only the clicked format is written";

  clickOn("export:csv");
  for (const char* s : {"ddp", "full_shard"}) EXPECT_TRUE(exists(base + "." + s + ".csv")) << s;
  EXPECT_NE(state_.exportMessage.find(".csv"), std::string::npos) << state_.exportMessage;

  // The PNG is read back from the framebuffer by the platform layer after the frame (tested by
  // the screenshot tests); the click asks for it under the same base name.
  EXPECT_TRUE(state_.pngRequest.empty());
  clickOn("export:png");
  EXPECT_EQ(state_.pngRequest, base + ".png");
}

TEST_F(ExportClicks, WithNothingToExportTheFileButtonsAreDisabled) {
  const std::string base = testing::freshTempDir("export_click_empty") + "/empty";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  openExportTab();
  clickOn("export:trace");
  clickOn("export:csv");
  EXPECT_TRUE(state_.exportMessage.empty()) << state_.exportMessage;
  EXPECT_FALSE(exists(base + ".json"));
  EXPECT_FALSE(exists(base + ".csv"));
}

TEST_F(ExportClicks, AClickBesideTheButtonDoesNothing) {
  const std::string base = testing::freshTempDir("export_click_miss") + "/miss";
  std::snprintf(state_.exportBase, sizeof state_.exportBase, "%s", base.c_str());
  addSession("ddp");
  openExportTab();
  const ItemRect r = items_.at("export:trace");
  imgui_.click([&] { drawAppFrame(state_, store_, nullptr); }, r.centerX(), r.y1 + 40);
  EXPECT_FALSE(exists(base + ".json"));
  EXPECT_TRUE(state_.exportMessage.empty()) << state_.exportMessage;
}

}  // namespace
}  // namespace shardscope::ui
