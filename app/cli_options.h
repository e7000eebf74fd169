// The run options shared by `shardscope run` and `shardscope worker`, bound to a RunConfig.
// Precedence: defaults < --config FILE < options given on the command line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "trace/run_config.h"

namespace shardscope::app {

class RunOptions {
 public:
  void addTo(CLI::App& command);
  // The final config: the file's keys (if any) with command-line options applied over them.
  std::optional<std::string> resolve(RunConfig& out) const;

 private:
  RunConfig parsed_;
  std::string configPath_;
  // For each option: whether it was given, and how to copy its value onto a config.
  std::vector<std::pair<CLI::Option*, std::function<void(RunConfig&)>>> bindings_;
};

}  // namespace shardscope::app
