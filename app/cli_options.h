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
  // `withOutputs`: the output files and --recording too (not for `estimate`, which runs nothing).
  void addTo(CLI::App& command, bool withOutputs = true);
  // The final config: the file's keys (if any) with command-line options applied over them.
  std::optional<std::string> resolve(RunConfig& out) const;

 private:
  void addOutputs(CLI::App& command);
  // Adds `flag` to `command`, bound to `field`: given on the command line, it overrides the file.
  template <typename T>
  CLI::Option* bindOption(CLI::App& command, const char* flag, T RunConfig::*field, const std::string& help);

  RunConfig parsed_;
  std::string configPath_;
  // For each option: whether it was given, and how to copy its value onto a config.
  std::vector<std::pair<CLI::Option*, std::function<void(RunConfig&)>>> bindings_;
};

}  // namespace shardscope::app
