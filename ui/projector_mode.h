// Projector mode: what makes the window readable in a lecture hall. Ctrl + / Ctrl - / Ctrl 0 scale
// text and sizes (a TrueType font rasterised at the scale, theme.h), H switches to the
// high-contrast palette, F shows one session full screen, S scales each session's memory lanes to
// its own peak, PageUp / PageDown page through the sessions. The same choices sit in the sidebar's
// "Display" section and on the command line (--ui-scale, --high-contrast, --memory-scale, --focus).
#pragma once

#include <string>

#include "ui/theme.h"

namespace shardscope::ui {

struct DisplayChoice {
  Look look;                    // the platform layer rebuilds fonts and style when this changes
  bool ownMemoryScale = false;  // each session's memory lanes up to its own peak, not the shared one
  int focusSession = -1;        // the one session shown full screen; -1: all of them
  bool stragglers = false;      // each collective's last rank marked, the others' wait hatched
  bool diffDifference = false;  // a diff session's B lanes: B - A, not A's outline over B (ui/diff_lanes.h)
};

// The keys above, unless a text field has the keyboard. `playheadSession` is the session F
// focuses (the one the playhead follows). Returns true when anything changed.
bool handleDisplayKeys(DisplayChoice& display, int playheadSession, int sessionCount);

// The sidebar's controls for the same choices.
void drawDisplayControls(DisplayChoice& display, int playheadSession, int sessionCount);

// The keyboard shortcuts, for the Help tab: one "keys: what" line each.
const char* const* displayShortcuts();

}  // namespace shardscope::ui
