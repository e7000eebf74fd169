// A Dear ImGui context without a window or GPU: enough to build frames (draw lists) for tests and
// the frame-time benchmark.
#pragma once

#include <functional>

namespace shardscope::ui {

class HeadlessImGui {
 public:
  HeadlessImGui(float width, float height);
  ~HeadlessImGui();
  // Builds one frame; `mouseX/Y` place the mouse, `mouseDown` holds its left button. Returns the
  // vertices the frame produced.
  int frame(const std::function<void()>& draw, float mouseX = -1, float mouseY = -1, bool mouseDown = false);
  // A left click as a user makes one: hover, press, release (three frames; ImGui buttons fire on
  // release, tabs on press).
  void click(const std::function<void()>& draw, float x, float y);
  // A key tapped as a user taps it: down for one frame, then up for one. `key` is a GLFW key code
  // (ImGui 1.86's GLFW backend indexes io.KeysDown by it; the key map below matches).
  void pressKey(const std::function<void()>& draw, int key, bool ctrl = false);
};

}  // namespace shardscope::ui
