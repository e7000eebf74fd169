// The tabs below the timelines are named once: every name and title is unique, and each name finds
// its own tab (what --tab, lessons and the app's tab bar look up).
#include <gtest/gtest.h>

#include <set>

#include "config/view_tabs.h"

namespace shardscope::config {
namespace {

TEST(ViewTabs, EachNameFindsItsOwnTabAndNoneRepeats) {
  std::set<std::string> names, titles;
  for (const auto& tab : viewTabs()) {
    EXPECT_TRUE(names.insert(tab.name).second) << tab.name;
    EXPECT_TRUE(titles.insert(tab.title).second) << tab.title;
    ASSERT_NE(findViewTab(tab.name), nullptr) << tab.name;
    EXPECT_STREQ(findViewTab(tab.name)->title, tab.title);
  }
  EXPECT_EQ(findViewTab("charts"), nullptr);
  EXPECT_EQ(findViewTab("Comparison"), nullptr) << "names, not titles";
  EXPECT_EQ(viewTabNames(), "comparison, memory, holdings, schedule, collectives, diff, estimate, export, help");
}

}  // namespace
}  // namespace shardscope::config
