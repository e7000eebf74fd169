// Drives whole app frames as a user does, in a headless ImGui context: draw a frame, then click a
// control where the frame drew it (ui/item_probe.h records the rectangles of the named controls).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "ui/app_window.h"
#include "ui/headless_frame.h"
#include "ui/item_probe.h"

namespace shardscope::ui {

class AppDriver {
 public:
  AppDriver(SessionStore& store, AppState& state, float width, float height)
      : imgui_(width, height), store_(store), state_(state) {
    setItemProbe(&items_);
  }
  ~AppDriver() { setItemProbe(nullptr); }

  // One frame; items() then holds what this frame drew. With an engine the configuration panel is
  // drawn too.
  void draw(EngineControl* engine = nullptr) {
    items_.clear();
    imgui_.frame([&] { drawAppFrame(state_, store_, engine); });
  }

  // Clicks the control the app drew under `name` in the last frame, then draws once more (a tab's
  // selection shows from the next frame on).
  void clickOn(const std::string& name, EngineControl* engine = nullptr) {
    ASSERT_TRUE(items_.count(name)) << name << " was not drawn";
    const ItemRect r = items_.at(name);
    items_.clear();
    imgui_.click([&] { drawAppFrame(state_, store_, engine); }, r.centerX(), r.centerY());
    draw(engine);
  }

  // A click anywhere, e.g. beside a control.
  void clickAt(float x, float y, EngineControl* engine = nullptr) {
    imgui_.click([&] { drawAppFrame(state_, store_, engine); }, x, y);
  }

  // Taps a key (a GLFW key code), with Ctrl held or not, then draws once more so that what the key
  // changed (the scale, the focus) shows in items().
  void pressKey(int key, bool ctrl = false, EngineControl* engine = nullptr) {
    imgui_.pressKey([&] { drawAppFrame(state_, store_, engine); }, key, ctrl);
    draw(engine);
  }

  const std::map<std::string, ItemRect>& items() const { return items_; }

  // A view-only window (as `shardscope view` opens one) over `store`, 1600x900, drawn twice: the
  // second frame is the settled one.
  static std::unique_ptr<AppDriver> viewOnly(SessionStore& store, AppState& state) {
    state.viewOnly = true;
    auto app = std::make_unique<AppDriver>(store, state, 1600, 900);
    app->draw();
    app->draw();
    return app;
  }

 private:
  HeadlessImGui imgui_;
  std::map<std::string, ItemRect> items_;
  SessionStore& store_;
  AppState& state_;
};

}  // namespace shardscope::ui
