// The app's first screen, where the runs will be drawn before there is one: the three ways in, one
// click each. A lesson; a run or a comparison of the sidebar's configuration; a recording opened,
// or a job listened for.
#pragma once

#include <string>

#include "ui/app_state.h"
#include "ui/panels.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// Unfolds the sidebar's Open or Listen panel itself; returns Run or Compare, and puts a lesson
// picked in state.doorLesson, for the caller to start once the window lets go of the session store
// (the first screen is drawn while it holds it, and starting runs takes it). `problem` and
// `compareProblem`: why Run or Compare cannot start (validate's message), or "".
ConfigAction drawFrontDoor(AppState& state, const std::string& problem, const std::string& compareProblem);

}  // namespace shardscope::ui
