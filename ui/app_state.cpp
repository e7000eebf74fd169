#include "ui/app_state.h"

#include "trace/view_tabs.h"

namespace shardscope::ui {

const char* bottomTabTitle(const std::string& name) {
  const trace::ViewTab* tab = trace::findViewTab(name);
  return tab ? tab->title : nullptr;
}

}  // namespace shardscope::ui
