// A PyTorch job's own trace in the app, as `shardscope view DIR` opens it: a headless frame draws
// its ranks' memory, compute and collectives, and the Estimate tab predicts nothing for a model
// the trace does not name.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "trace/profiler_trace.h"

namespace shardscope::ui {
namespace {

// One step of a rank: unit 0's forward between FSDP2's hooks, its all-gather run by gloo, and the
// unsharded parameters allocated and freed (the profiler's fields, as PyTorch 2.11 writes them).
const char* kRankTrace = R"json({"schemaVersion": 1, "distributedInfo": {"rank": RANK, "world_size": 2}, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1000, "dur": 5000},
  {"ph": "X", "cat": "user_annotation", "name": "FSDP::all_gather (0)", "pid": 1, "tid": 1, "ts": 1010, "dur": 300},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::_allgather_base_", "pid": 1, "tid": 1, "ts": 1020, "dur": 20,
   "args": {"Input Dims": [[2048], [1024]], "Input type": ["float", "float"]}},
  {"ph": "X", "cat": "user_annotation", "name": "gloo:all_gather", "pid": 1, "tid": 2, "ts": 1030, "dur": 250},
  {"ph": "X", "cat": "user_annotation", "name": "FSDP::all_gather_copy_out (0)", "pid": 1, "tid": 1, "ts": 1290, "dur": 10},
  {"ph": "X", "cat": "user_annotation", "name": "FSDP::pre_forward (0)", "pid": 1, "tid": 1, "ts": 1000, "dur": 400},
  {"ph": "X", "cat": "user_annotation", "name": "FSDP::post_forward (0)", "pid": 1, "tid": 1, "ts": 3000, "dur": 50},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1295,
   "args": {"Bytes": 8192, "Addr": 11, "Total Allocated": 8192, "Device Type": 0}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3020,
   "args": {"Bytes": -8192, "Addr": 11, "Total Allocated": 0, "Device Type": 0}}
]})json";

TEST(ProfilerView, AJobsOwnTraceDrawsAndIsNotPredicted) {
  const std::string dir = testing::freshTempDir("profiler_view");
  for (int r = 0; r < 2; ++r) {
    std::string text = kRankTrace;
    text.replace(text.find("RANK"), 4, std::to_string(r));
    std::ofstream(trace::profilerTraceFileName(dir, r)) << text;
  }
  auto loaded = trace::loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  SessionStore store;
  {
    auto lock = store.lock();
    Session s;  // as viewFile (app/gui_app.cpp) adds it
    s.title = loaded.title;
    s.jobLabel = loaded.jobLabel;
    s.config = loaded.config;
    s.recording = std::move(loaded.recording);
    s.status = SessionStatus::Done;
    s.device = loaded.device;
    store.add(std::move(s));
  }
  AppState state;
  state.viewOnly = true;
  AppDriver app(store, state, 1600, 900);
  app.draw();
  app.draw();
  EXPECT_GT(state.lastStats.memoryColumns, 0) << "the gathered parameters' lane";
  EXPECT_GE(state.lastStats.spansDrawn + state.lastStats.spansFolded, 2 * 2) << "each rank's forward and all-gather";
  app.clickOn("tab:Estimate");
  app.draw();
  EXPECT_FALSE(app.items().count("estimate:seed-7b")) << "no prediction panel for a model the trace does not name";
  {
    auto lock = store.lock();
    store.sessions()[0].jobLabel.clear();  // as if the model were shardscope's own
  }
  app.draw();
  EXPECT_TRUE(app.items().count("estimate:seed-7b")) << "the panel, where there is a model to predict for";
}

}  // namespace
}  // namespace shardscope::ui
