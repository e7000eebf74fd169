// Builds without the window (SHARDSCOPE_BUILD_GUI=OFF, e.g. on a GPU machine without GLFW): the
// commands that need it say so and point at the ones that work.
#include <cstdio>

#include "app/gui_app.h"

namespace shardscope::app {

namespace {
int windowNotBuilt() {
  std::fprintf(stderr,
               "error: this shardscope was built without the window (SHARDSCOPE_BUILD_GUI=OFF).\n"
               "Use 'shardscope run' / 'compare' with --trace or --summary, and open the file with "
               "'shardscope view FILE' on a build that has the window.\n");
  return 2;
}
}  // namespace

int runGui(const config::RunConfig&, const std::string&, bool, const std::vector<config::RunConfig>&,
           const WindowChoice&) {
  return windowNotBuilt();
}

int viewFile(const std::vector<std::string>&, const WindowChoice&) { return windowNotBuilt(); }

int runLessonGui(const lessons::Lesson&, const std::string&, const WindowChoice&, bool, const std::vector<std::string>&,
                 const std::string&) {
  return windowNotBuilt();
}

int runListenGui(const engine::CollectorOptions&, const WindowChoice&) { return windowNotBuilt(); }

bool knownTab(const std::string&) { return true; }  // no window: runGui and viewFile say so

}  // namespace shardscope::app
