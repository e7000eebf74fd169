#include "ui/app_state.h"

#include "config/view_tabs.h"

namespace shardscope::ui {

const char* bottomTabTitle(const std::string& name) {
  const config::ViewTab* tab = config::findViewTab(name);
  return tab ? tab->title : nullptr;
}

}  // namespace shardscope::ui
