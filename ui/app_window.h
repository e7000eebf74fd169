// One frame of the shardscope window: configuration on the left, the sessions' timelines on one
// shared time axis and memory scale in the middle, breakdown and comparison below. The window talks
// to the engine only through EngineControl and reads only the SessionStore.
#pragma once

#include <string>

#include "ui/app_state.h"
#include "ui/session_store.h"

namespace shardscope::ui {

void drawAppFrame(AppState& state, SessionStore& store, EngineControl* engine);

}  // namespace shardscope::ui
