#include "ui/item_probe.h"

#include <imgui.h>

namespace shardscope::ui {

namespace {
std::map<std::string, ItemRect>* probe = nullptr;  // the UI draws on one thread
}

void setItemProbe(std::map<std::string, ItemRect>* p) { probe = p; }

bool itemProbeOn() { return probe != nullptr; }

void noteItem(const char* name) {
  if (!probe) return;
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  (*probe)[name] = {min.x, min.y, max.x, max.y};
}

void noteText(const std::string& name, float x, float y, const char* text) {
  if (!probe) return;
  const ImVec2 size = ImGui::CalcTextSize(text);
  (*probe)[name] = {x, y, x + size.x, y + size.y};
}

}  // namespace shardscope::ui
