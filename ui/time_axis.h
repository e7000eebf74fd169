// The shared time axis of every timeline: a visible window [beginNs, endNs) relative to the run's
// origin, mapped onto a pixel range. Mouse wheel zooms around the cursor, dragging pans. Views that
// share one TimeAxis stay synchronised (the comparison view).
#pragma once

#include <cstdint>

namespace shardscope::ui {

// The left label column every timeline lane leaves before its time axis ("rank 0", "compute"), so
// lanes drawn by different views line up on one clock. It grows with the UI scale (theme.h).
float timelineLabelWidth();

struct TimeAxis {
  double beginNs = 0;
  double endNs = 1e9;
  bool userMoved = false;  // false: follow the data (live runs keep the whole run in view)

  double toX(double ns, float x0, float width) const { return x0 + (ns - beginNs) / (endNs - beginNs) * width; }
  double toNs(double x, float x0, float width) const { return beginNs + (x - x0) / width * (endNs - beginNs); }
  // The whole of [beginNs, endNs] in view, with a margin after it.
  void fit(double beginNs, double endNs);
  // wheel > 0 zooms in around `anchorNs`.
  void zoom(double anchorNs, float wheel);
  void pan(double deltaNs);
  // A drag of `pixels` over a lane `width` pixels wide, moved in whole pixels (so a memory lane's
  // columns move by whole columns and those still in view are kept, ui/memory_columns.h); a part
  // of a pixel is kept for the next drag, so a slow drag on a fractional-pixel display still moves.
  void drag(float pixels, float width);
  float dragRemainder = 0;
};

}  // namespace shardscope::ui
