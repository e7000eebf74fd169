#include "ui/time_axis.h"

#include <algorithm>
#include <cmath>

#include "ui/theme.h"

namespace shardscope::ui {

float timelineLabelWidth() { return px(64.0f); }

void TimeAxis::fit(double fromNs, double toNs) {
  beginNs = fromNs;
  endNs = fromNs + std::max((toNs - fromNs) * 1.02, 1e6);
}

void TimeAxis::zoom(double anchorNs, float wheel) {
  const double factor = std::pow(0.85, wheel);
  const double span = std::clamp((endNs - beginNs) * factor, 1e3, 1e13);  // 1 us .. ~3 h
  const double t = (anchorNs - beginNs) / (endNs - beginNs);
  beginNs = anchorNs - t * span;
  endNs = beginNs + span;
  userMoved = true;
}

void TimeAxis::pan(double deltaNs) {
  beginNs += deltaNs;
  endNs += deltaNs;
  userMoved = true;
}

void TimeAxis::drag(float pixels, float width) {
  dragRemainder += pixels;
  const float whole = std::round(dragRemainder);
  dragRemainder -= whole;
  if (whole != 0 && width > 0) pan(-static_cast<double>(whole) * (endNs - beginNs) / width);
}

}  // namespace shardscope::ui
