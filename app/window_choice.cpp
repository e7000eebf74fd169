// The window options that the commands parse whether or not this build has the window.
#include <cstdio>

#include "app/gui_app.h"

namespace shardscope::app {

std::optional<std::string> parseWindowSize(const std::string& text, int& width, int& height) {
  int w = 0, h = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%dx%d%c", &w, &h, &extra) != 2 || w < 640 || h < 480 || w > 7680 || h > 4320) {
    return "--window-size '" + text + "' is not WIDTHxHEIGHT from 640x480 to 7680x4320; e.g. --window-size 1920x1080.";
  }
  width = w;
  height = h;
  return std::nullopt;
}

}  // namespace shardscope::app
