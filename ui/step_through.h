// The app at a human pace: the playhead's keys and transport bar (play, speed, step by event
// group, and a gated live run's Step / Continue), and the "Who holds what" tab with the animated
// collective that the playhead is on or the user selected. Everything shown comes from the
// recording; the ring animation names the schedule it assumes.
#pragma once

#include <vector>

#include "ui/app_state.h"

namespace shardscope::ui {

// Where the playhead is drawn: placed, or at the newest recorded time.
double playheadTime(const AppState& state, double durationNs);

// Space plays and pauses, the arrows step by event group (or, on a gated live run at its live
// edge, release the ranks for one), Home and End jump. Not while a text field has the keyboard.
void handlePlayheadKeys(AppState& state, const std::vector<Session>& sessions, EngineControl* engine,
                        double durationNs);

// Play / pause, speed, step buttons and the current event group; the gate's Step and Continue.
void drawTransportBar(AppState& state, const std::vector<Session>& sessions, EngineControl* engine, double durationNs);

// Who holds what at the playhead, beside the ring animation of the active collective.
void drawHoldingsTab(AppState& state, const std::vector<Session>& sessions, double playheadNs);

}  // namespace shardscope::ui
