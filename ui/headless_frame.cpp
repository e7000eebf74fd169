#include "ui/headless_frame.h"

#include <imgui.h>

namespace shardscope::ui {

HeadlessImGui::HeadlessImGui(float width, float height) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(width, height);
  io.DeltaTime = 1.0f / 60.0f;
  // As the OpenGL3 backend does on GL >= 3.2: draw lists may exceed 64k vertices.
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas; no texture upload needed
}

HeadlessImGui::~HeadlessImGui() { ImGui::DestroyContext(); }

int HeadlessImGui::frame(const std::function<void()>& draw, float mouseX, float mouseY,
                         bool mouseDown) {
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

}  // namespace shardscope::ui
