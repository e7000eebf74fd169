// The platform layer: a GLFW window with an OpenGL 3 context, Dear ImGui's GLFW and OpenGL3
// backends, the frame loop (which sleeps while the window is hidden), and PNG screenshots of the
// window. Kept tiny and separate from what is drawn.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ui/theme.h"

namespace shardscope::ui {

struct WindowOptions {
  int width = 1600;
  int height = 1000;
  std::string title = "shardscope";
  // Headless capture: when set, render until `readyToCapture()` (or `maxFrames`), write the
  // window's pixels to this PNG, and close.
  std::string screenshotPath;
  std::function<bool()> readyToCapture;
  int maxFrames = 100000;
  // Interactive capture: when the string is non-empty after a frame is drawn, that frame is
  // written there as a PNG and the string is cleared (the app's "Save PNG").
  std::string* captureRequest = nullptr;
  std::string* captureResult = nullptr;  // "wrote FILE" or the error
  // The look to draw with (projector mode): read before every frame; when it changes, the fonts are
  // rasterised again at the new scale and uploaded. nullptr: scale 1, default palette.
  const Look* look = nullptr;
  // Files and folders dropped on the window are added here, in the order dropped (the app opens
  // them: AppState::droppedPaths). nullptr: drops are ignored.
  std::vector<std::string>* droppedPaths = nullptr;
};

// Runs the window until it is closed (or the screenshot is written). `drawFrame` builds one ImGui
// frame. Returns 0, or 1 with `error` set when no window could be opened.
int runWindow(const WindowOptions& options, const std::function<void()>& drawFrame, std::string& error);

// Writes RGBA pixels (top row first) as a PNG, whole or not at all (files::writeOutputFile);
// nothing on success, else the error naming the path and the reason.
std::optional<std::string> writePng(const std::string& path, int width, int height, const unsigned char* rgba);

}  // namespace shardscope::ui
