#include "ui/projector_mode.h"

#include <imgui.h>

#include "ui/item_probe.h"
#include "ui/key_codes.h"

namespace shardscope::ui {

namespace {

bool pressed(int key) { return ImGui::IsKeyPressed(key, false); }

void toggleFocus(DisplayChoice& display, int playheadSession, int sessionCount) {
  if (display.focusSession >= 0 || sessionCount == 0) {
    display.focusSession = -1;
  } else {
    display.focusSession = playheadSession >= 0 && playheadSession < sessionCount ? playheadSession : 0;
  }
}

const char* const kShortcuts[] = {
    "Space: play / pause the playhead",
    "Right / Left: next / previous event group; Home / End: start / newest",
    "Ctrl + / Ctrl - / Ctrl 0: larger / smaller text and lanes / scale 1 (projector)",
    "H: high-contrast palette (black background, brighter colours)",
    "F: focus: the playhead's session full screen (F or Esc again: all sessions)",
    "S: each session's memory lanes scaled to its own peak (S again: one shared scale)",
    "W: stragglers: a red mark where a rank issued a collective last, the others' wait for it hatched",
    "D: in a diff (the Diff tab, A and B open): B's memory lanes with A's total as an outline, or B - A (D again)",
    "PageUp / PageDown: page through the sessions when they do not all fit",
    "N / P: next / previous caption of a lesson (shardscope --lesson NAME, or the Lessons menu)",
    "Ctrl O: open a recording (a trace, a summary, a job's directory, a PyTorch job's torch.profiler traces)",
    "Mouse wheel over a timeline: zoom; drag: pan; click the ruler: place the playhead",
    nullptr,
};

}  // namespace

bool handleDisplayKeys(DisplayChoice& display, int playheadSession, int sessionCount) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return false;
  const DisplayChoice before = display;
  if (io.KeyCtrl) {
    if (pressed(keys::kEqual) || pressed(keys::kPadAdd)) display.look.scale = steppedScale(display.look.scale, +1);
    if (pressed(keys::kMinus) || pressed(keys::kPadSubtract)) display.look.scale = steppedScale(display.look.scale, -1);
    if (pressed(keys::kZero) || pressed(keys::kPadZero)) display.look.scale = 1.0f;
  } else if (!io.KeyAlt && !io.KeySuper) {
    if (pressed(keys::kH)) display.look.highContrast = !display.look.highContrast;
    if (pressed(keys::kS)) display.ownMemoryScale = !display.ownMemoryScale;
    if (pressed(keys::kF)) toggleFocus(display, playheadSession, sessionCount);
    if (pressed(keys::kW)) display.stragglers = !display.stragglers;
    if (pressed(keys::kD)) display.diffDifference = !display.diffDifference;
    if (display.focusSession >= 0 && pressed(keys::kEscape)) {
      display.focusSession = -1;
    }
  }
  return display.look != before.look || display.ownMemoryScale != before.ownMemoryScale ||
         display.focusSession != before.focusSession || display.stragglers != before.stragglers ||
         display.diffDifference != before.diffDifference;
}

void drawDisplayControls(DisplayChoice& display, int playheadSession, int sessionCount) {
  ImGui::TextDisabled("Display (projector)");
  if (ImGui::Button("A-")) display.look.scale = steppedScale(display.look.scale, -1);
  noteItem("display:smaller");
  ImGui::SameLine();
  ImGui::Text("text %.2fx", display.look.scale);
  ImGui::SameLine();
  if (ImGui::Button("A+")) display.look.scale = steppedScale(display.look.scale, +1);
  noteItem("display:larger");
  ImGui::Checkbox("high contrast (H)", &display.look.highContrast);
  noteItem("display:contrast");
  ImGui::Checkbox("each session on its own scale (S)", &display.ownMemoryScale);
  noteItem("display:own-scale");
  ImGui::Checkbox("stragglers: last and waits (W)", &display.stragglers);
  noteItem("display:stragglers");
  ImGui::BeginDisabled(sessionCount == 0);
  bool focused = display.focusSession >= 0;
  if (ImGui::Checkbox("focus one session (F)", &focused)) toggleFocus(display, playheadSession, sessionCount);
  noteItem("display:focus");
  ImGui::EndDisabled();
}

const char* const* displayShortcuts() { return kShortcuts; }

}  // namespace shardscope::ui
