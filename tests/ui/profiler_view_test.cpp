// A PyTorch job's own trace in the app, as `shardscope view DIR` opens it: a headless frame draws
// its ranks' memory, compute and collectives, and the Estimate tab predicts nothing for a model
// the trace does not name.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include "tests/support/run_cli.h"
#include "tests/ui/app_driver.h"
#include "import/profiler_trace.h"

namespace shardscope::ui {
namespace {

// One step of a rank: unit 0's forward between FSDP2's hooks, its all-gather run by gloo, and the
// unsharded parameters allocated and freed (the profiler's fields, as PyTorch 2.11 writes them).
const char* kRankTrace =
    R"json({"schemaVersion": 1, "distributedInfo": {"rank": RANK, "world_size": 2}, "traceEvents": [
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

// The loaded record as a session, as viewFile (app/gui_app.cpp) adds it.
void addAsViewed(SessionStore& store, trace::LoadedTrace loaded) {
  auto lock = store.lock();
  Session s;
  s.title = loaded.title;
  s.jobLabel = loaded.jobLabel;
  s.config = loaded.config;
  s.recording = std::move(loaded.recording);
  s.status = SessionStatus::Done;
  s.device = loaded.device;
  store.add(std::move(s));
}

// The record in a view-only window, drawn twice (the second frame is the settled one).
struct ViewedRecord {
  explicit ViewedRecord(trace::LoadedTrace loaded) {
    addAsViewed(store, std::move(loaded));
    app = AppDriver::viewOnly(store, state);
  }
  SessionStore store;
  AppState state;
  std::unique_ptr<AppDriver> app;
};

TEST(ProfilerView, AJobsOwnTraceDrawsAndIsNotPredicted) {
  const std::string dir = testing::freshTempDir("profiler_view");
  for (int r = 0; r < 2; ++r) {
    std::string text = kRankTrace;
    text.replace(text.find("RANK"), 4, std::to_string(r));
    std::ofstream(import::profilerTraceFileName(dir, r)) << text;
  }
  auto loaded = import::loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ViewedRecord viewed(std::move(loaded));
  auto& app = *viewed.app;
  auto& state = viewed.state;
  auto& store = viewed.store;
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

// CUDA memory snapshots on their own: memory only, no steps; the frame draws its lane and the
// panels say what is unknown rather than 0.
TEST(ProfilerView, SnapshotsOnTheirOwnDrawTheirMemory) {
  const std::string dir = testing::freshTempDir("snapshot_view");
  const auto python = testing::runCommand({"python3", "-c", R"(
import pickle, sys
frames = [{"name": "_multi_tensor_adam", "filename": "/x/torch/optim/adam.py", "line": 1}]
def entry(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 1790000000000000 + t, "frames": frames}
trace = [entry("alloc", 1, 4096, 0), entry("alloc", 2, 8192, 500), entry("free_requested", 2, 8192, 900),
         entry("free_completed", 2, 8192, 900)]
pickle.dump({"segments": [], "device_traces": [trace]}, open(sys.argv[1] + "/rank-0.memory.pickle", "wb"))
)",
                                           dir});
  ASSERT_EQ(python.exitCode, 0) << python.output;
  auto loaded = import::loadJobDirectory(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ViewedRecord viewed(std::move(loaded));
  auto& app = *viewed.app;
  auto& state = viewed.state;
  EXPECT_GT(state.lastStats.memoryColumns, 0) << "the optimizer's state, 4 KiB then 12 KiB";
  EXPECT_EQ(state.lastStats.spansDrawn + state.lastStats.spansFolded, 0) << "no compute in a snapshot";
  app.clickOn("tab:Estimate");
  app.draw();
  EXPECT_FALSE(app.items().count("estimate:seed-7b")) << "no prediction for a model the snapshot does not name";
}

}  // namespace
}  // namespace shardscope::ui
