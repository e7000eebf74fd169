// The app's first screen, where the runs will be drawn before there is one: the three ways in, one
// click each. A lesson; a run or a comparison of the sidebar's configuration; a recording opened,
// or a job listened for.
#pragma once

#include <string>

#include "ui/app_state.h"
#include "ui/panels.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// Starts a lesson, or unfolds the sidebar's Open or Listen panel, itself; returns Run or Compare
// for the caller to start as the sidebar's buttons do. `problem` and `compareProblem`: why Run or
// Compare cannot start (validate's message), or "".
ConfigAction drawFrontDoor(AppState& state, EngineControl& engine, const std::string& problem,
                           const std::string& compareProblem);

}  // namespace shardscope::ui
