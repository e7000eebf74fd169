#include "config/view_tabs.h"

namespace shardscope::config {

const std::vector<ViewTab>& viewTabs() {
  static const std::vector<ViewTab> tabs = {
      {"comparison", "Comparison", "every session's figures side by side"},
      {"memory", "Memory breakdown", "memory by role at the playhead"},
      {"holdings", "Who holds what", "who holds what, and the ring"},
      {"schedule", "Schedule", "a pipeline's schedule against its run, the bubble, activations in flight"},
      {"collectives", "Last collectives", "each rank's last collectives side by side, the first mismatch named"},
      {"diff", "Diff", "the second recording against the first: the largest changes and a verdict"},
      {"estimate", "Estimate", "predictions next to what was measured"},
      {"export", "Export", "traces, CSV and PNG"},
      {"help", "Help", "the views and keys"},
  };
  return tabs;
}

const ViewTab* findViewTab(const std::string& name) {
  for (const auto& tab : viewTabs()) {
    if (name == tab.name) return &tab;
  }
  return nullptr;
}

std::string viewTabNames(const char* separator) {
  std::string names;
  for (const auto& tab : viewTabs()) names += (names.empty() ? "" : separator) + std::string(tab.name);
  return names;
}

}  // namespace shardscope::config
