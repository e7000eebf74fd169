// The tabs below the timelines, as a table: a tab is one draw function and one row. Its name is one
// of config/view_tabs.h's, which gives its title, what --tab and a lesson call it, and its order.
#pragma once

#include <vector>

#include "stats/run_stats.h"
#include "ui/app_state.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// What a tab draws from, this frame.
struct TabFrame {
  AppState& state;
  SessionStore& store;
  const std::vector<Session>& sessions;
  int cursorSession;  // the session under the mouse, or -1
  double playheadNs;
  // The playhead on session `index`'s own clock: in a diff session A's is at the same moment of
  // the algorithm as B's (ui/diff_alignment.h), elsewhere every session's is playheadNs.
  double playheadOf(int index) const;
  // The sessions' per-rank figures, computed only when a tab asks and the store changed.
  const std::vector<std::vector<stats::RankStats>>& stats();
};

struct BottomTab {
  const char* name;  // config/view_tabs.h's name, e.g. "holdings"
  void (*draw)(TabFrame& frame);
  bool AppState::*shown = nullptr;  // set every frame to whether the tab is in front
};

// Every tab, in config/view_tabs.h's order.
const std::vector<BottomTab>& bottomTabs();

void drawBottomTabs(AppState& state, SessionStore& store, const std::vector<Session>& sessions, int cursorSession,
                    double playheadNs);

}  // namespace shardscope::ui
