#include "ui/headless_frame.h"

#include <imgui.h>

#include "ui/key_codes.h"
#include "ui/theme.h"

namespace shardscope::ui {

HeadlessImGui::HeadlessImGui(float width, float height) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(width, height);
  io.DeltaTime = 1.0f / 60.0f;
  // As the OpenGL3 backend does on GL >= 3.2: draw lists may exceed 64k vertices.
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  // The named keys where the GLFW backend maps them, so GetKeyIndex works as in the app.
  io.KeyMap[ImGuiKey_Space] = keys::kSpace;
  io.KeyMap[ImGuiKey_Escape] = keys::kEscape;
  io.KeyMap[ImGuiKey_RightArrow] = keys::kRight;
  io.KeyMap[ImGuiKey_LeftArrow] = keys::kLeft;
  io.KeyMap[ImGuiKey_PageUp] = keys::kPageUp;
  io.KeyMap[ImGuiKey_PageDown] = keys::kPageDown;
  io.KeyMap[ImGuiKey_Home] = keys::kHome;
  io.KeyMap[ImGuiKey_End] = keys::kEnd;
  applyLook(Look{});  // the app's font and style; builds the atlas (no texture upload needed)
}

HeadlessImGui::~HeadlessImGui() { ImGui::DestroyContext(); }

int HeadlessImGui::frame(const std::function<void()>& draw, float mouseX, float mouseY, bool mouseDown) {
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(mouseX, mouseY);
  io.MouseDown[0] = mouseDown;
  ImGui::NewFrame();
  draw();
  ImGui::Render();
  return ImGui::GetDrawData()->TotalVtxCount;
}

void HeadlessImGui::click(const std::function<void()>& draw, float x, float y) {
  frame(draw, x, y, false);
  frame(draw, x, y, true);
  frame(draw, x, y, false);
}

void HeadlessImGui::pressKey(const std::function<void()>& draw, int key, bool ctrl) {
  ImGuiIO& io = ImGui::GetIO();
  io.KeyCtrl = ctrl;
  io.KeysDown[key] = true;
  frame(draw);
  io.KeysDown[key] = false;
  frame(draw);
  io.KeyCtrl = false;
}

}  // namespace shardscope::ui
