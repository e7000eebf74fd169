// The window over the real engine, as the app runs it: a store, the controller the sidebar talks
// to, the window's state, and a headless driver to draw frames and click what they drew.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "app/engine_control.h"
#include "tests/ui/app_driver.h"

namespace shardscope::app {

class AppOverEngine : public ::testing::Test {
 protected:
  AppOverEngine() : engine_(store_, SHARDSCOPE_BINARY) {}

  void draw() { app_.draw(&engine_); }
  void click(const std::string& name) { app_.clickOn(name, &engine_); }

  // Frames until `done` holds of the sessions (under the store's lock), as the window would draw
  // them; false after `seconds`.
  template <typename Done>
  bool drawUntil(Done done, double seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      draw();
      {
        auto lock = store_.lock();
        if (done(store_.sessions())) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  ui::SessionStore store_;
  EngineSessionControl engine_;
  ui::AppState state_;
  ui::AppDriver app_{store_, state_, 1920, 1080};
};

}  // namespace shardscope::app
