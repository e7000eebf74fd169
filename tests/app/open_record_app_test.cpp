// The app's Open, as a user does it: type or pick a path in the sidebar's "Open a recording" (or
// press Ctrl+O), press Open, and the recording replaces what the window shows, read off the
// window's thread; a path that cannot be opened says why and keeps what was shown.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/engine_control.h"
#include "tests/app/app_over_engine.h"
#include "engine/launch/run_controller.h"
#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "ui/key_codes.h"

namespace shardscope::app {
namespace {

// One rank of a PyTorch job as torch.profiler writes it: a step, an all-gather run by gloo, a
// block allocated and freed.
void writeProfilerTrace(const std::string& path, int rank) {
  auto span = [](const std::string& name, double ts, double dur, int tid) {
    return nlohmann::json{{"ph", "X"}, {"cat", "user_annotation"}, {"name", name}, {"pid", 1}, {"tid", tid}, {"ts", ts},
                          {"dur", dur}};
  };
  auto memory = [](double ts, int64_t bytes, int64_t total) {
    return nlohmann::json{{"ph", "i"},
                          {"cat", "cpu_instant_event"},
                          {"name", "[memory]"},
                          {"pid", 1},
                          {"tid", 1},
                          {"ts", ts},
                          {"args", {{"Bytes", bytes}, {"Addr", 11}, {"Total Allocated", total}, {"Device Type", 0}}}};
  };
  auto op = span("c10d::_allgather_base_", 1020, 20, 1);
  op["cat"] = "cpu_op";
  op["args"] = {{"Input Dims", {{2048}, {1024}}}, {"Input type", {"float", "float"}}};
  const nlohmann::json events = {span("ProfilerStep#2", 1000, 5000, 1),
                                 span("FSDP::all_gather (0)", 1010, 300, 1),
                                 op,
                                 span("gloo:all_gather", 1030, 250, 2),
                                 memory(1295, 8192, 8192),
                                 memory(3020, -8192, 0)};
  std::ofstream(path) << nlohmann::json{
      {"schemaVersion", 1},
      {"distributedInfo", {{"rank", rank}, {"world_size", 2}}},
      {"traceEvents",
       events}}.dump();
}

class OpenFromTheSidebar : public AppOverEngine {
 protected:
  // Frames past ImGui's double-click time, so that the next two clicks are a double click of
  // their own (not the second and third clicks after an earlier one).
  void settle() {
    for (int i = 0; i < 30; ++i) draw();
  }
  void typePath(const std::string& path) {
    std::snprintf(state_.open.path, sizeof state_.open.path, "%s", path.c_str());
    draw();
  }
  // Frames until the open under way has finished, as the window would draw them.
  bool drawUntilOpened() {
    if (!state_.open.message.empty()) {
      ADD_FAILURE() << "Open did not start: " << state_.open.message;
      return false;
    }
    for (int i = 0; i < 500; ++i) {
      draw();
      if (!engine_.busy() && state_.open.seenFinished == engine_.openStatus().finished) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::vector<std::string> titles() {
    auto lock = store_.lock();
    std::vector<std::string> out;
    for (const auto& s : store_.sessions()) out.push_back(s.title);
    return out;
  }
};

// A run's trace, typed: the window shows it, and the configuration panel takes its configuration
// (Run runs it again).
TEST_F(OpenFromTheSidebar, ARunsTraceOpensWithItsConfiguration) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::FullShard;
  c.steps = 2;
  c.tracePath = testing::freshTempDir("open_run_trace") + "/run.json";
  ASSERT_TRUE(engine::runTraining(c, SHARDSCOPE_BINARY, {}).ok);
  draw();
  click("open:header");
  typePath(c.tracePath);
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_EQ(engine_.openStatus().error, "");
  ASSERT_EQ(titles().size(), 1u);
  EXPECT_EQ(titles()[0], config::strategyTitle(config::StrategyKind::FullShard));
  EXPECT_EQ(state_.config.strategy, config::StrategyKind::FullShard) << "Run runs what was opened again";
  EXPECT_EQ(state_.config.steps, 2);
  EXPECT_EQ(state_.config.hidden, c.hidden) << "tiny: not the panel's default";
  auto lock = store_.lock();
  EXPECT_EQ(store_.sessions()[0].recording.rank(1).steps.size(), 2u);
}

// "beside what is shown": a PyTorch job's traces added next to a run of shardscope's, two
// sessions on one axis; without it, the next open replaces both.
TEST_F(OpenFromTheSidebar, AJobOpensBesideARun) {
  config::RunConfig c = testing::tinyGptConfig();
  c.steps = 2;
  const std::string dir = testing::freshTempDir("open_beside");
  c.tracePath = dir + "/run.json";
  ASSERT_TRUE(engine::runTraining(c, SHARDSCOPE_BINARY, {}).ok);
  const std::string job = dir + "/job";
  std::filesystem::create_directories(job);
  for (int r = 0; r < 2; ++r) writeProfilerTrace(job + "/rank-" + std::to_string(r) + ".pt.trace.json", r);
  draw();
  click("open:header");
  typePath(c.tracePath);
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  click("open:beside");
  ASSERT_TRUE(state_.open.beside);
  typePath(job);
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  ASSERT_EQ(titles().size(), 2u) << engine_.openStatus().error;
  EXPECT_EQ(titles()[0], config::strategyTitle(c.strategy));
  EXPECT_NE(titles()[1].find("a PyTorch job (torch.profiler)"), std::string::npos) << titles()[1];
  EXPECT_EQ(state_.config.hidden, c.hidden) << "the panels keep the run's configuration (tiny: not the default)";
  EXPECT_EQ(state_.config.layers, c.layers);
  click("open:beside");
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_EQ(titles().size(), 1u) << "replaced";
}

// A PyTorch job's per-rank traces, named as the profiler names them, picked in the listing and
// ticked: one session of both ranks; the listing names what each entry is.
TEST_F(OpenFromTheSidebar, TickedProfilerTracesOpenAsOneJob) {
  const std::string dir = testing::freshTempDir("open_profiler_files");
  writeProfilerTrace(dir + "/host_11.1700.pt.trace.json", 1);
  writeProfilerTrace(dir + "/host_10.1700.pt.trace.json", 0);
  std::ofstream(dir + "/notes.txt") << "not a recording";
  draw();
  click("open:header");
  typePath(dir);
  ASSERT_EQ(state_.open.entries.size(), 3u) << "the parent and the two traces";
  EXPECT_EQ(state_.open.entries[1].kind, "torch.profiler trace");
  EXPECT_EQ(state_.open.unlisted, 1u) << "notes.txt";
  click("open:tick:host_10.1700.pt.trace.json");
  click("open:tick:host_11.1700.pt.trace.json");
  ASSERT_EQ(state_.open.ticked.size(), 2u);
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_EQ(engine_.openStatus().error, "");
  auto lock = store_.lock();
  ASSERT_EQ(store_.sessions().size(), 1u);
  const auto& s = store_.sessions()[0];
  EXPECT_FALSE(s.jobLabel.empty()) << "a PyTorch job's own model";
  ASSERT_EQ(s.recording.ranks(), 2);
  EXPECT_EQ(s.recording.rank(1).collectives.size(), 1u);
  EXPECT_EQ(s.recording.rank(0).peakTotal, 8192);
}

// A double click goes into a plain folder (the listing shows it) and opens a recording, a
// PyTorch job's folder too; one click only picks.
TEST_F(OpenFromTheSidebar, DoubleClickGoesIntoAFolderAndOpensARecording) {
  const std::string dir = testing::freshTempDir("open_double_click");
  std::filesystem::create_directories(dir + "/runs/job");
  for (int r = 0; r < 2; ++r) writeProfilerTrace(dir + "/runs/job/rank-" + std::to_string(r) + ".pt.trace.json", r);
  draw();
  click("open:header");
  typePath(dir);
  settle();
  click("open:entry:runs");
  EXPECT_EQ(std::string(state_.open.path), dir + "/runs") << "one click picks";
  EXPECT_EQ(state_.open.listedFolder, dir) << "and stays in the folder";
  click("open:entry:runs");  // the second click of a double click
  EXPECT_EQ(state_.open.listedFolder, dir + "/runs") << "a double click goes in";
  ASSERT_TRUE(app_.items().count("open:entry:job")) << "the listing shows what is in it";
  EXPECT_EQ(state_.open.entries.back().kind, "torch.profiler traces");
  settle();
  click("open:entry:job");
  click("open:entry:job");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_EQ(engine_.openStatus().error, "");
  EXPECT_EQ(engine_.openStatus().what, dir + "/runs/job");
  ASSERT_EQ(titles().size(), 1u);
  EXPECT_NE(titles()[0].find("a PyTorch job (torch.profiler)"), std::string::npos) << titles()[0];
}

// Files dropped on the window (GLFW's drop callback fills AppState::droppedPaths): a PyTorch job's
// per-rank traces open as one job, and the panel unfolds to say so.
TEST_F(OpenFromTheSidebar, DroppedFilesOpen) {
  const std::string dir = testing::freshTempDir("open_dropped");
  for (int r = 0; r < 2; ++r) writeProfilerTrace(dir + "/node" + std::to_string(r) + ".pt.trace.json", r);
  draw();
  state_.droppedPaths = {dir + "/node1.pt.trace.json", dir + "/node0.pt.trace.json"};
  draw();
  EXPECT_TRUE(state_.droppedPaths.empty()) << "taken";
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_EQ(engine_.openStatus().error, "");
  ASSERT_TRUE(app_.items().count("open:path")) << "the panel unfolded";
  auto lock = store_.lock();
  ASSERT_EQ(store_.sessions().size(), 1u);
  EXPECT_EQ(store_.sessions()[0].recording.ranks(), 2);
}

// A path that is not there: the panel says why, naming it, and what was shown stays; Ctrl+O
// unfolds the panel from the keyboard.
TEST_F(OpenFromTheSidebar, APathThatCannotBeOpenedKeepsWhatWasShown) {
  const std::string dir = testing::freshTempDir("open_bad_path");
  writeProfilerTrace(dir + "/rank-0.pt.trace.json", 0);
  app_.pressKey(ui::keys::kO, /*ctrl=*/true, &engine_);
  ASSERT_TRUE(app_.items().count("open:path")) << "Ctrl+O unfolds Open";
  app_.clickAt(1500, 1000, &engine_);  // out of the path field it put the cursor in, to set it here
  typePath(dir);
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  ASSERT_EQ(titles().size(), 1u) << engine_.openStatus().error;
  const auto shown = titles();
  typePath(dir + "/missing.json");
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_NE(engine_.openStatus().error.find("'" + dir + "/missing.json' does not exist"), std::string::npos)
      << engine_.openStatus().error;
  EXPECT_EQ(titles(), shown) << "what was shown stays";
  std::ofstream(dir + "/broken.json") << R"({"schema": "shardscope.summary/4", "ranks": [)";
  typePath(dir + "/broken.json");
  click("open");
  ASSERT_TRUE(drawUntilOpened());
  EXPECT_NE(engine_.openStatus().error.find("broken.json"), std::string::npos) << engine_.openStatus().error;
  EXPECT_EQ(titles(), shown);
}

}  // namespace
}  // namespace shardscope::app
