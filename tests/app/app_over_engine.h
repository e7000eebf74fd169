// The window over the real engine, as the app runs it: a store, the controller the sidebar talks
// to, the window's state, and a headless driver to draw frames and click what they drew.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "app/engine_control.h"
#include "tests/ui/app_driver.h"

namespace shardscope::app {

class AppOverEngine : public ::testing::Test {
 protected:
  AppOverEngine() : engine_(store_, SHARDSCOPE_BINARY) {}

  void draw() { app_.draw(&engine_); }
  void click(const std::string& name) { app_.clickOn(name, &engine_); }

  ui::SessionStore store_;
  EngineSessionControl engine_;
  ui::AppState state_;
  ui::AppDriver app_{store_, state_, 1920, 1080};
};

}  // namespace shardscope::app
