// Colours and the ImGui style of shardscope: one colour per memory role, collective op and compute
// kind, chosen to stay distinguishable on a projector.
#pragma once

#include <imgui.h>

#include "trace/events.h"

namespace shardscope::ui {

ImU32 roleColor(trace::MemoryRole role);
ImU32 collectiveColor(trace::CollectiveOp op);
ImU32 computeColor(trace::ComputeKind kind);
const char* collectiveShortName(trace::CollectiveOp op);  // "AG", "RS", "AR", ...

void applyTheme();

}  // namespace shardscope::ui
