#include "ui/activation_split.h"

#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>

#include "trace/format.h"
#include "ui/memory_at.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

using Held = std::map<std::pair<int, int>, int64_t>;  // (stage, micro-batch) -> bytes

// One rank's bar from `at`, `width` for `scale` bytes: the held micro-batches, then the rest.
void drawSplitBar(ImDrawList* dl, ImVec2 at, float width, float height, double scale, const Held& held,
                  int64_t activation) {
  dl->AddRectFilled(at, ImVec2(at.x + width, at.y + height), IM_COL32(26, 28, 33, 255));
  const auto widthOf = [&](int64_t bytes) { return width * static_cast<float>(static_cast<double>(bytes) / scale); };
  float x = at.x;
  int64_t drawn = 0;
  for (const auto& [key, bytes] : held) {
    const int64_t part = std::min(bytes, std::max<int64_t>(0, activation - drawn));
    dl->AddRectFilled(ImVec2(x, at.y), ImVec2(x + widthOf(part), at.y + height),
                      actionColor({config::PipeActionKind::Forward, key.first, key.second}));
    x += widthOf(part);
    drawn += part;
  }
  const float end = at.x + widthOf(activation);
  if (end > x) dl->AddRectFilled(ImVec2(x, at.y), ImVec2(end, at.y + height), roleColor(trace::MemoryRole::Activation));
}

}  // namespace

std::string activationSplitText(const Held& held, int64_t activation) {
  std::map<int, int64_t> byBatch;
  int64_t heldBytes = 0;
  for (const auto& [key, bytes] : held) {
    byBatch[key.second] += bytes;
    heldBytes += bytes;
  }
  std::string out;
  for (const auto& [mb, bytes] : byBatch) {
    out += (out.empty() ? "" : ", ") + std::string("mb") + std::to_string(mb) + " " +
           trace::formatBytes(static_cast<double>(bytes));
  }
  const int64_t rest = std::max<int64_t>(0, activation - heldBytes);
  return (out.empty() ? "no micro-batch held" : out) + "; " + trace::formatBytes(static_cast<double>(rest)) +
         " besides (the running action's, received inputs and gradients)";
}

std::vector<std::string> drawActivationsByMicroBatch(const Session& s, const PipelineLanes& lanes, double tNs) {
  const auto& rec = s.recording;
  std::vector<std::string> out;
  if (lanes.actions.empty() || rec.ranks() == 0) return out;
  const auto activation = static_cast<size_t>(trace::MemoryRole::Activation);
  // The actions are on the recording's own clock; the playhead counts from its origin.
  const int64_t absolute = static_cast<int64_t>(std::clamp(tNs, -1e18, 1e18)) + rec.originNs();
  double scale = 1;
  for (int r = 0; r < rec.ranks(); ++r) scale = std::max(scale, static_cast<double>(rec.rank(r).peakTotal));
  ImGui::Spacing();
  ImGui::TextUnformatted("Activations by micro-batch at the playhead (each in its action cells' colour):");
  const float height = ImGui::GetTextLineHeight();
  const float width = std::max(ImGui::GetContentRegionAvail().x * 0.35f, 100.0f);
  for (int r = 0; r < rec.ranks() && static_cast<size_t>(r) < lanes.actions.size(); ++r) {
    const int64_t bytes = memoryAt(rec, r, tNs)[activation];
    const Held held = stats::activationBytesHeldAt(rec.rank(r), lanes.actions[static_cast<size_t>(r)], absolute);
    ImGui::Text("rank %d", r);
    ImGui::SameLine(ImGui::CalcTextSize("rank 000").x + 8);
    drawSplitBar(ImGui::GetWindowDrawList(), ImGui::GetCursorScreenPos(), width, height, scale, held, bytes);
    ImGui::Dummy(ImVec2(width, height));
    ImGui::SameLine();
    out.push_back(activationSplitText(held, bytes));
    ImGui::TextDisabled("%s", out.back().c_str());
  }
  return out;
}

}  // namespace shardscope::ui
