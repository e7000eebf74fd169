#include "app/gui_app.h"

#include <cstdio>

#include "app/engine_control.h"
#include "trace/trace_reader.h"
#include "ui/app_window.h"
#include "ui/platform_window.h"

namespace shardscope::app {

int runGui(const RunConfig& config, const std::string& workerExecutable, bool startImmediately,
           bool compare, const std::string& screenshotPath) {
  ui::SessionStore store;
  EngineSessionControl engine(store, workerExecutable);
  ui::AppState state;
  state.config = config;
  if (startImmediately) {
    if (compare) engine.startCompare(config);
    else engine.startRun(config);
  }
  ui::WindowOptions options;
  options.screenshotPath = screenshotPath;
  options.readyToCapture = [&] { return !engine.busy(); };
  options.captureRequest = &state.pngRequest;
  options.captureResult = &state.exportMessage;
  std::string error;
  const int rc = ui::runWindow(options, [&] { ui::drawAppFrame(state, store, &engine); }, error);
  if (rc != 0) {
    std::fprintf(stderr, "shardscope: %s\n", error.c_str());
    engine.stop();
    return rc;
  }
  auto lock = store.lock();
  for (const auto& s : store.sessions()) {
    if (s.status == ui::SessionStatus::Failed) {
      std::fprintf(stderr, "shardscope: %s: %s\n", s.title.c_str(), s.error.c_str());
      return screenshotPath.empty() ? 0 : 1;
    }
  }
  return 0;
}

int viewFile(const std::string& path, const std::string& screenshotPath) {
  auto loaded = trace::loadChromeTrace(path);
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "shardscope: %s\n", loaded.error.c_str());
    return 2;
  }
  ui::SessionStore store;
  {
    auto lock = store.lock();
    ui::Session s;
    s.title = loaded.config.strategy + " (" + zeroName(loaded.config.strategy) + ")";
    s.config = loaded.config;
    s.recording = std::move(loaded.recording);
    s.status = ui::SessionStatus::Done;
    s.device = "recorded";
    store.add(std::move(s));
  }
  ui::AppState state;
  state.viewOnly = true;
  state.banner = path;
  state.config = loaded.config;
  ui::WindowOptions options;
  options.screenshotPath = screenshotPath;
  options.readyToCapture = [] { return true; };
  options.captureRequest = &state.pngRequest;
  options.captureResult = &state.exportMessage;
  std::string error;
  const int rc = ui::runWindow(options, [&] { ui::drawAppFrame(state, store, nullptr); }, error);
  if (rc != 0) std::fprintf(stderr, "shardscope: %s\n", error.c_str());
  return rc;
}

}  // namespace shardscope::app
