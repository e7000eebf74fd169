// The UI's EngineControl over the engine's controller: runs happen on a background thread, so the
// window never waits on them; their events land in the SessionStore in batches, under its lock.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "ui/session_store.h"

namespace shardscope::app {

class EngineSessionControl final : public ui::EngineControl {
 public:
  EngineSessionControl(ui::SessionStore& store, std::string workerExecutable);
  ~EngineSessionControl() override;

  void startRun(const RunConfig& config) override;
  void startCompare(const std::vector<RunConfig>& runs) override;
  void startTitled(const std::vector<RunConfig>& runs, const std::vector<std::string>& titles) override;
  void stop() override;
  void stepGate() override;
  void continueGate() override;
  bool busy() const override { return busy_.load(); }
  std::string checkConfig(const RunConfig& config) const override;

 private:
  // Titles: one per run, or none for "strategy (ZeRO name)".
  void launch(std::vector<RunConfig> runs, std::vector<std::string> titles = {});
  void runOne(const RunConfig& config, int sessionIndex);

  ui::SessionStore& store_;
  std::string workerExecutable_;
  std::thread worker_;
  std::atomic<bool> busy_{false};
  std::atomic<bool> stopRequested_{false};
  std::atomic<int> gateSteps_{0};          // Steps pressed, not yet handed to the controller
  std::atomic<bool> gateContinue_{false};
  // checkConfig runs every frame: the memory check (the estimator and /proc) is redone only when
  // the configuration changes or a second has passed (free memory moves).
  mutable std::string checkedConfig_;
  mutable std::chrono::steady_clock::time_point checkedAt_{};
  mutable std::optional<std::string> memoryProblem_;
};

}  // namespace shardscope::app
