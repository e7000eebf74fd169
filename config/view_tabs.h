// The tabs below the app's timelines, named once: the name a lesson, --tab and the tests use, the
// title the app shows, and what the tab holds (for --help). The UI draws them in this order.
#pragma once

#include <string>
#include <vector>

namespace shardscope::config {

struct ViewTab {
  const char* name;   // "holdings"
  const char* title;  // "Who holds what"
  const char* shows;  // "who holds what, and the ring"
};

const std::vector<ViewTab>& viewTabs();
// The tab called `name`, or null when there is none.
const ViewTab* findViewTab(const std::string& name);
// "comparison, memory, holdings, schedule, collectives, diff, estimate, export, help" (with `separator` between).
std::string viewTabNames(const char* separator = ", ");

}  // namespace shardscope::config
