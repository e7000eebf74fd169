// The UI's EngineControl over the engine's controller: runs happen on a background thread, so the
// window never waits on them; their events land in the SessionStore in batches, under its lock.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "files/read_progress.h"
#include "ui/session_store.h"

namespace shardscope::app {

// The events the window's sessions hold in detail, over all their ranks, unless --window-events
// says otherwise (trace::kDefaultDetailEvents).
constexpr size_t kDefaultSessionDetailEvents = trace::kDefaultDetailEvents;

class EngineSessionControl final : public ui::EngineControl {
 public:
  EngineSessionControl(ui::SessionStore& store, std::string workerExecutable,
                       size_t detailEvents = kDefaultSessionDetailEvents);
  ~EngineSessionControl() override;

  void startRun(const config::RunConfig& config) override;
  void startCompare(const std::vector<config::RunConfig>& runs) override;
  void startTitled(const std::vector<config::RunConfig>& runs, const std::vector<std::string>& titles) override;
  void stop() override;
  void stepGate() override;
  void continueGate() override;
  bool busy() const override { return busy_.load(); }
  std::string checkConfig(const config::RunConfig& config) const override;
  // The collector on loopback, its job one session (app/live_job.h); Stop ends it.
  std::string startListen(int port, const std::string& dir) override;
  // Saved records read on the worker thread (ui/record_files.h), in place of the sessions once read.
  std::string openRecord(const std::vector<std::string>& paths, bool beside) override;
  ui::OpenStatus openStatus() const override;
  // Whether an open is reading now (its worker cannot be interrupted mid-file).
  bool readingRecord() const { return openStatus().reading; }

 private:
  // Clears the store and readies a new launch on the worker thread; false when one is under way.
  bool beginLaunch();
  // Titles: one per run, or none for "strategy (ZeRO name)".
  void launch(std::vector<config::RunConfig> runs, std::vector<std::string> titles = {});
  // The session holds at most `detailEvents` over its ranks; a longer run folds its older steps.
  void runOne(const config::RunConfig& config, int sessionIndex, size_t detailEvents);

  ui::SessionStore& store_;
  std::string workerExecutable_;
  size_t sessionDetailEvents_;  // over every session of a launch
  std::thread worker_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopRequested_{false};
  std::atomic<int> gateSteps_{0};  // Steps pressed, not yet handed to the controller
  std::atomic<bool> gateContinue_{false};
  // checkConfig runs every frame: the memory check (the estimator and /proc) is redone only when
  // the configuration changes or a second has passed (free memory moves).
  mutable std::string checkedConfig_;
  mutable std::chrono::steady_clock::time_point checkedAt_{};
  mutable std::optional<std::string> memoryProblem_;
  mutable std::mutex openMutex_;  // guards openStatus_, which the worker thread writes
  ui::OpenStatus openStatus_;
  std::unique_ptr<files::ReadProgress> readProgress_;  // the open being read; guarded by openMutex_
};

}  // namespace shardscope::app
