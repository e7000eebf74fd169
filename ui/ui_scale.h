// The range of the window's scale (projector mode): shared by the UI, which clamps to it, and the
// command line, which checks --ui-scale against it in builds with or without the window.
#pragma once

namespace shardscope::ui {

constexpr float kMinUiScale = 0.75f;
constexpr float kMaxUiScale = 3.0f;
constexpr float kUiScaleStep = 0.25f;  // one Ctrl + or Ctrl -

}  // namespace shardscope::ui
