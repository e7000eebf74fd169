// The first screen's three ways in over the real engine, as a user clicks them: its Run and a
// lesson start their runs. The first screen is drawn while the window holds the session store,
// and the engine's launch takes the store to clear it: what the first screen asks for must start
// once the store is let go, or the window waits on itself for ever.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>

#include "tests/app/app_over_engine.h"
#include "tests/support/run_cli.h"

namespace shardscope::app {
namespace {

class FrontDoor : public AppOverEngine {
 protected:
  ~FrontDoor() override { engine_.stop(); }

  // Frames until a session has ended, or false after two minutes.
  bool drawUntilASessionEnded() {
    return drawUntil(
        [](const std::vector<ui::Session>& sessions) {
          return std::any_of(sessions.begin(), sessions.end(),
                             [](const ui::Session& s) { return s.status == ui::SessionStatus::Done; });
        },
        120);
  }

  // A click that must come back: made on its own thread, so that a window waiting on itself fails
  // the test at once (the process cannot end while that thread holds the store) instead of hanging.
  void clickWithin(const std::string& name, int seconds = 20) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> clicked = done->get_future();
    std::thread([this, name, done] {
      click(name);
      done->set_value();
    }).detach();
    if (clicked.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
      std::fprintf(stderr, "FAILED: clicking %s never came back: the window waits on the store it holds\n",
                   name.c_str());
      std::_Exit(1);
    }
  }
};

TEST_F(FrontDoor, ItsRunStartsARun) {
  state_.config = testing::tinyGptConfig();
  draw();
  ASSERT_TRUE(app_.items().count("door:run")) << "the first screen was not drawn";
  clickWithin("door:run");
  EXPECT_TRUE(drawUntilASessionEnded()) << "the run the first screen started never ended";
}

TEST_F(FrontDoor, ItsLessonStartsTheLessonsRuns) {
  draw();
  ASSERT_TRUE(app_.items().count("door:lesson:accordion"));
  clickWithin("door:lesson:accordion");
  EXPECT_TRUE(state_.lesson.active);
  EXPECT_TRUE(drawUntilASessionEnded()) << "the lesson's run never ended";
}

}  // namespace
}  // namespace shardscope::app
