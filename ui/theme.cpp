#include "ui/theme.h"

namespace shardscope::ui {

ImU32 roleColor(trace::MemoryRole role) {
  switch (role) {
    case trace::MemoryRole::ParamShard: return IM_COL32(76, 120, 168, 255);      // blue
    case trace::MemoryRole::ParamGathered: return IM_COL32(245, 133, 24, 255);   // orange
    case trace::MemoryRole::GradShard: return IM_COL32(84, 162, 75, 255);        // green
    case trace::MemoryRole::GradFull: return IM_COL32(183, 225, 110, 255);       // light green
    case trace::MemoryRole::OptimizerState: return IM_COL32(178, 121, 162, 255); // purple
    case trace::MemoryRole::Activation: return IM_COL32(228, 87, 86, 255);       // red
    case trace::MemoryRole::CommBuffer: return IM_COL32(238, 202, 59, 255);      // yellow
    case trace::MemoryRole::Other: return IM_COL32(158, 158, 158, 255);          // grey
    case trace::MemoryRole::AllocatorCache: return IM_COL32(92, 100, 112, 255);   // slate
    case trace::MemoryRole::DeviceRuntime: return IM_COL32(70, 70, 78, 255);      // dark slate
  }
  return IM_COL32(200, 200, 200, 255);
}

ImU32 collectiveColor(trace::CollectiveOp op) {
  switch (op) {
    case trace::CollectiveOp::AllGather: return IM_COL32(245, 133, 24, 255);
    case trace::CollectiveOp::ReduceScatter: return IM_COL32(84, 162, 75, 255);
    case trace::CollectiveOp::AllReduce: return IM_COL32(114, 183, 178, 255);
    case trace::CollectiveOp::Broadcast: return IM_COL32(255, 157, 166, 255);
    case trace::CollectiveOp::Barrier: return IM_COL32(157, 117, 93, 255);
  }
  return IM_COL32(200, 200, 200, 255);
}

ImU32 computeColor(trace::ComputeKind kind) {
  switch (kind) {
    case trace::ComputeKind::Step: return IM_COL32(70, 70, 80, 255);
    case trace::ComputeKind::Forward: return IM_COL32(90, 140, 200, 255);
    case trace::ComputeKind::Backward: return IM_COL32(150, 110, 200, 255);
    case trace::ComputeKind::Optimizer: return IM_COL32(178, 121, 162, 255);
  }
  return IM_COL32(200, 200, 200, 255);
}

const char* collectiveShortName(trace::CollectiveOp op) {
  switch (op) {
    case trace::CollectiveOp::AllGather: return "AG";
    case trace::CollectiveOp::ReduceScatter: return "RS";
    case trace::CollectiveOp::AllReduce: return "AR";
    case trace::CollectiveOp::Broadcast: return "BC";
    case trace::CollectiveOp::Barrier: return "BAR";
  }
  return "?";
}

void applyTheme() {
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.GrabRounding = 3.0f;
  style.ItemSpacing = ImVec2(8, 5);
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.11f, 0.13f, 1.0f);
  style.Colors[ImGuiCol_ChildBg] = ImVec4(0.12f, 0.13f, 0.15f, 1.0f);
}

}  // namespace shardscope::ui
