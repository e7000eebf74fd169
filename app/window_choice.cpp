// The window options that the commands parse whether or not this build has the window.
#include <cstdio>

#include "app/gui_app.h"
#include "ui/ui_scale.h"

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

std::optional<std::string> parseUiScale(const std::string& text, float& scale) {
  float value = 0;
  char suffix = 0, extra = 0;
  const int read = std::sscanf(text.c_str(), "%f%c%c", &value, &suffix, &extra);
  const bool shapeOk = read == 1 || (read == 2 && (suffix == 'x' || suffix == 'X'));
  if (!shapeOk || !(value >= ui::kMinUiScale && value <= ui::kMaxUiScale)) {
    char range[48];
    std::snprintf(range, sizeof range, "from %.2f to %.0f", ui::kMinUiScale, ui::kMaxUiScale);
    return "--ui-scale '" + text + "' is not a scale " + range +
           "; e.g. --ui-scale 1.5 for a projector, 2 for a large hall.";
  }
  scale = value;
  return std::nullopt;
}

std::optional<std::string> checkMemoryScale(const std::string& text) {
  if (text == "shared" || text == "own") return std::nullopt;
  return "--memory-scale '" + text +
         "' is not a choice: shared (every session's memory lanes on one scale, to compare "
         "heights) or own (each session's lanes up to its own peak, to see its shape)";
}

std::optional<std::string> parseWindowEvents(const std::string& text, size_t& events) {
  unsigned long long value = 0;
  char unit = 0, extra = 0;
  const int read = std::sscanf(text.c_str(), "%llu%c%c", &value, &unit, &extra);
  const unsigned long long scale = read == 1                                   ? 1
                                   : read == 2 && (unit == 'k' || unit == 'K') ? 1000
                                   : read == 2 && unit == 'M'                  ? 1000000
                                                                               : 0;
  const bool digitsFirst = !text.empty() && text[0] >= '0' && text[0] <= '9';
  if (!digitsFirst || scale == 0 || value > 1'000'000'000ULL || value * scale < 10'000 ||
      value * scale > 1'000'000'000) {
    return "--window-events '" + text +
           "' is not a number of events from 10000 to 1000000000 (k and M allowed): "
           "the most events the window's runs hold in detail, 30 to 40 MB a million; e.g. --window-events 4M on a "
           "small machine";
  }
  events = static_cast<size_t>(value * scale);
  return std::nullopt;
}

bool WindowChoice::setsUpWindow() const {
  return !at.empty() || !zoom.empty() || windowSize != "1600x1000" || uiScale != "1" || highContrast || stragglers ||
         memoryScale != "shared" || !focus.empty() || !tab.empty() || caption != 1 || windowEvents != "24000000";
}

}  // namespace shardscope::app
