// The browser's EngineControl: there is no engine in the page, so a recording opens at once on
// the window's thread (the page has one), and running says it needs the full build.
#pragma once

#include <string>
#include <vector>

#include "ui/session_store.h"

namespace shardscope::app {

class WebControl final : public ui::EngineControl {
 public:
  explicit WebControl(ui::SessionStore& store) : store_(store) {}

  void startRun(const config::RunConfig&) override {}
  void startCompare(const std::vector<config::RunConfig>&) override {}
  void stop() override {}
  void stepGate() override {}
  void continueGate() override {}
  bool busy() const override { return false; }
  std::string checkConfig(const config::RunConfig&) const override { return runsUnavailable(); }
  std::string runsUnavailable() const override;
  std::string openRecord(const std::vector<std::string>& paths, bool beside) override;
  ui::OpenStatus openStatus() const override { return status_; }
  // Reads what openRecord was asked for, a frame after: that frame says what is being read, as the
  // page cannot draw while it reads (one thread). Called before each frame.
  void readAsked();

 private:
  ui::SessionStore& store_;
  ui::OpenStatus status_;
  std::vector<std::string> asked_;  // the paths to read at the next readAsked
};

}  // namespace shardscope::app
