// Where the app's named controls were drawn, so a test can click them as a user would. Off (a null
// map) in the app itself. Dear ImGui's own test engine would find items by label, but it needs an
// ImGui built with IMGUI_ENABLE_TEST_ENGINE, which Debian's libimgui is not.
#pragma once

#include <map>
#include <string>

namespace shardscope::ui {

struct ItemRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float centerX() const { return (x0 + x1) / 2; }
  float centerY() const { return (y0 + y1) / 2; }
};

// Where noteItem records to; nullptr switches recording off.
void setItemProbe(std::map<std::string, ItemRect>* probe);

// Records the rectangle of the item ImGui drew last under `name`, when a probe is set.
void noteItem(const char* name);
// Records where a text drawn straight onto a draw list (not an item) lies, when a probe is set:
// the lanes' labels, which a test checks do not run over each other.
void noteText(const std::string& name, float x, float y, const char* text);
// Whether a probe is set: a name that costs a string to build is built only then, not every frame.
bool itemProbeOn();

}  // namespace shardscope::ui
