// Colours, fonts and the ImGui style of shardscope: one colour per memory role, collective op and
// compute kind, chosen to stay distinguishable on a projector; the look (scale and palette) that
// projector mode changes.
#pragma once

#include <string>

#include <imgui.h>

#include "trace/events.h"
#include "ui/ui_scale.h"

namespace shardscope::ui {

// How the window looks: the scale of text and sizes (a projector wants 1.5 to 2) and the palette.
struct Look {
  float scale = 1.0f;
  bool highContrast = false;  // black background, white text, brighter role colours
};
inline bool operator==(const Look& a, const Look& b) { return a.scale == b.scale && a.highContrast == b.highContrast; }
inline bool operator!=(const Look& a, const Look& b) { return !(a == b); }

constexpr float kBaseFontPixels = 13.0f;  // the text height at scale 1

// Rebuilds the font atlas (DejaVu Sans Mono rasterised at kBaseFontPixels x scale, a real
// TrueType font, not a stretched bitmap) and the ImGui style and palette for `look`. Call between
// frames; a renderer must upload the atlas again afterwards. Returns the font file used, or "" where
// none was found (then ImGui's built-in font, rasterised at the same size).
std::string applyLook(const Look& look);
const Look& currentLook();
// Lengths in pixels at scale 1, at the current scale: every fixed size in the window goes through this.
inline float px(float pixelsAtScale1) { return pixelsAtScale1 * currentLook().scale; }
// One Ctrl + (+1) or Ctrl - (-1) step from `scale`, within kMinUiScale..kMaxUiScale.
float steppedScale(float scale, int steps);

ImU32 roleColor(trace::MemoryRole role);
ImU32 collectiveColor(trace::CollectiveOp op);
// A tensor group's collectives (--tp), whatever their op: activations on the critical path, told
// apart at a glance from the data dimension's weights and gradients.
ImU32 tensorGroupColor();
// A collective a PyTorch job ran outside c10d (symm_mem::*, a framework's own all-reduce): its own
// colour whatever its op, so that it is not read as one of c10d's.
ImU32 outsideC10dColor();
ImU32 computeColor(trace::ComputeKind kind);
ImU32 laneBackground();
ImU32 laneLabelColor();                                   // "compute", "comm" beside the lanes
const char* collectiveShortName(trace::CollectiveOp op);  // "AG", "RS", "AR", ...
// A hint in the disabled colour that wraps at its window's or column's edge instead of running
// off it (narrow panels, projector scale); printf-style, as ImGui::Text.
void wrappedHint(const char* fmt, ...) IM_FMTARGS(1);
// Diagonal stripes over [xa, xb) x [y, y + height): time spent waiting, not working.
void drawHatch(ImDrawList* dl, float xa, float xb, float y, float height);

// The look at scale 1 with the default palette (kept for callers without a look to apply).
void applyTheme();

}  // namespace shardscope::ui
