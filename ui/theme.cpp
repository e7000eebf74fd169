#include "ui/theme.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace shardscope::ui {

namespace {

Look gLook;  // the look the atlas and style were last built for

// Where Debian's fonts-dejavu-core puts the font; SHARDSCOPE_FONT names another TTF.
std::string findFontFile() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("SHARDSCOPE_FONT")) candidates.emplace_back(chosen);
  candidates.emplace_back("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf");
  for (const auto& path : candidates) {
    if (std::ifstream(path).good()) return path;
  }
  return "";
}

// The same hue, lighter and more saturated: role colours that hold up on a washed-out projector.
ImU32 brighter(ImU32 c) {
  auto channel = [&](int shift) {
    const float v = static_cast<float>((c >> shift) & 0xFF) / 255.0f;
    return static_cast<ImU32>(std::min(1.0f, v * 1.25f + 0.08f) * 255.0f) << shift;
  };
  return channel(IM_COL32_R_SHIFT) | channel(IM_COL32_G_SHIFT) | channel(IM_COL32_B_SHIFT) | (c & IM_COL32_A_MASK);
}

ImU32 inPalette(ImU32 c) { return gLook.highContrast ? brighter(c) : c; }

void applyStyle(const Look& look) {
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.ItemSpacing = ImVec2(8, 5);
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.11f, 0.13f, 1.0f);
  style.Colors[ImGuiCol_ChildBg] = ImVec4(0.12f, 0.13f, 0.15f, 1.0f);
  if (look.highContrast) {
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0, 0, 0, 1);
    style.Colors[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 1);
    style.Colors[ImGuiCol_Text] = ImVec4(1, 1, 1, 1);
    style.Colors[ImGuiCol_TextDisabled] = ImVec4(0.82f, 0.82f, 0.82f, 1);
    style.Colors[ImGuiCol_Border] = ImVec4(0.75f, 0.75f, 0.75f, 1);
    style.Colors[ImGuiCol_Separator] = ImVec4(0.75f, 0.75f, 0.75f, 1);
    style.Colors[ImGuiCol_FrameBg] = ImVec4(0.18f, 0.18f, 0.22f, 1);
    style.WindowBorderSize = 1.0f;
    style.FrameBorderSize = 1.0f;
  }
  style.ScaleAllSizes(look.scale);
}

}  // namespace

std::string applyLook(const Look& requested) {
  Look look = requested;
  look.scale = std::clamp(look.scale, kMinUiScale, kMaxUiScale);
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const float pixels = std::round(kBaseFontPixels * look.scale);
  const std::string file = findFontFile();
  ImFont* font = nullptr;
  if (!file.empty()) {
    ImFontConfig config;
    config.OversampleH = 2;  // sharper text between pixels
    font = io.Fonts->AddFontFromFileTTF(file.c_str(), pixels, &config);
  }
  if (!font) {
    ImFontConfig config;
    config.SizePixels = pixels;
    io.Fonts->AddFontDefault(&config);
  }
  unsigned char* texels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&texels, &w, &h);  // rasterise now: the renderer uploads it next
  io.FontGlobalScale = 1.0f;
  applyStyle(look);
  gLook = look;
  return font ? file : "";
}

const Look& currentLook() { return gLook; }

float steppedScale(float scale, int steps) {
  const float snapped = std::round(scale / kUiScaleStep) * kUiScaleStep;
  return std::clamp(snapped + kUiScaleStep * static_cast<float>(steps), kMinUiScale, kMaxUiScale);
}

ImU32 roleColor(trace::MemoryRole role) {
  switch (role) {
    case trace::MemoryRole::ParamShard:
      return inPalette(IM_COL32(76, 120, 168, 255));  // blue
    case trace::MemoryRole::ParamGathered:
      return inPalette(IM_COL32(245, 133, 24, 255));  // orange
    case trace::MemoryRole::GradShard:
      return inPalette(IM_COL32(84, 162, 75, 255));  // green
    case trace::MemoryRole::GradFull:
      return inPalette(IM_COL32(183, 225, 110, 255));  // light green
    case trace::MemoryRole::OptimizerState:
      return inPalette(IM_COL32(178, 121, 162, 255));  // purple
    case trace::MemoryRole::Activation:
      return inPalette(IM_COL32(228, 87, 86, 255));  // red
    case trace::MemoryRole::CommBuffer:
      return inPalette(IM_COL32(238, 202, 59, 255));  // yellow
    case trace::MemoryRole::Other:
      return inPalette(IM_COL32(158, 158, 158, 255));  // grey
    case trace::MemoryRole::AllocatorCache:
      return inPalette(IM_COL32(92, 100, 112, 255));  // slate
    case trace::MemoryRole::DeviceRuntime:
      return inPalette(IM_COL32(70, 70, 78, 255));  // dark slate
  }
  return IM_COL32(200, 200, 200, 255);
}

ImU32 collectiveColor(trace::CollectiveOp op) {
  switch (op) {
    case trace::CollectiveOp::AllGather:
      return inPalette(IM_COL32(245, 133, 24, 255));
    case trace::CollectiveOp::ReduceScatter:
      return inPalette(IM_COL32(84, 162, 75, 255));
    case trace::CollectiveOp::AllReduce:
      return inPalette(IM_COL32(114, 183, 178, 255));
    case trace::CollectiveOp::Broadcast:
      return inPalette(IM_COL32(255, 157, 166, 255));
    case trace::CollectiveOp::Barrier:
      return inPalette(IM_COL32(157, 117, 93, 255));
    case trace::CollectiveOp::AllToAll:
      return inPalette(IM_COL32(178, 121, 162, 255));  // mauve
    case trace::CollectiveOp::Send:
      return inPalette(IM_COL32(76, 120, 168, 255));  // blue
    case trace::CollectiveOp::Recv:
      return inPalette(IM_COL32(121, 160, 214, 255));  // light blue
  }
  return IM_COL32(200, 200, 200, 255);
}

ImU32 tensorGroupColor() { return inPalette(IM_COL32(214, 96, 160, 255)); }  // magenta: apart from every op
ImU32 outsideC10dColor() { return inPalette(IM_COL32(236, 201, 58, 255)); }  // gold: apart from every op

ImU32 computeColor(trace::ComputeKind kind) {
  switch (kind) {
    case trace::ComputeKind::Step:
      return inPalette(IM_COL32(70, 70, 80, 255));
    case trace::ComputeKind::Forward:
      return inPalette(IM_COL32(90, 140, 200, 255));
    case trace::ComputeKind::Backward:
      return inPalette(IM_COL32(150, 110, 200, 255));
    case trace::ComputeKind::Optimizer:
      return inPalette(IM_COL32(178, 121, 162, 255));
    case trace::ComputeKind::CopyToDevice:
      return inPalette(IM_COL32(80, 190, 150, 255));
    case trace::ComputeKind::CopyToHost:
      return inPalette(IM_COL32(200, 170, 60, 255));
    case trace::ComputeKind::PinHostMemory:
      return inPalette(IM_COL32(150, 150, 160, 255));
  }
  return IM_COL32(200, 200, 200, 255);
}

// Diagonal stripes over [xa, xb) x [y, y + height): time spent waiting, not working
// (a straggler's wait, a pipeline's bubble).
void drawHatch(ImDrawList* dl, float xa, float xb, float y, float height) {
  dl->PushClipRect(ImVec2(xa, y), ImVec2(xb, y + height), true);
  dl->AddRectFilled(ImVec2(xa, y), ImVec2(xb, y + height), IM_COL32(20, 20, 24, 110));
  const float step = px(5.0f);
  for (float x = xa - height; x < xb; x += step) {
    dl->AddLine(ImVec2(x, y + height), ImVec2(x + height, y), IM_COL32(235, 235, 240, 150), 1.0f);
  }
  dl->PopClipRect();
}

void wrappedHint(const char* fmt, ...) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  va_list args;
  va_start(args, fmt);
  ImGui::TextWrappedV(fmt, args);
  va_end(args);
  ImGui::PopStyleColor();
}

ImU32 laneBackground() { return gLook.highContrast ? IM_COL32(0, 0, 0, 255) : IM_COL32(22, 24, 28, 255); }

ImU32 laneLabelColor() { return gLook.highContrast ? IM_COL32(235, 235, 235, 255) : IM_COL32(150, 150, 160, 255); }

const char* collectiveShortName(trace::CollectiveOp op) {
  switch (op) {
    case trace::CollectiveOp::AllGather:
      return "AG";
    case trace::CollectiveOp::ReduceScatter:
      return "RS";
    case trace::CollectiveOp::AllReduce:
      return "AR";
    case trace::CollectiveOp::Broadcast:
      return "BC";
    case trace::CollectiveOp::Barrier:
      return "BAR";
    case trace::CollectiveOp::AllToAll:
      return "A2A";
    case trace::CollectiveOp::Send:
      return "SEND";
    case trace::CollectiveOp::Recv:
      return "RECV";
  }
  return "?";
}

void applyTheme() { applyLook(Look{}); }

}  // namespace shardscope::ui
