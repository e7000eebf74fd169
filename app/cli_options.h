// The run options shared by `shardscope run` and `shardscope worker`, bound to a RunConfig.
// Precedence: defaults < --config FILE < options given on the command line.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/run_config.h"

namespace shardscope::app {

class RunOptions {
 public:
  // `withOutputs`: the output files and --recording too (not for `estimate`, which runs nothing).
  void addTo(CLI::App& command, bool withOutputs = true);
  // The final config: the file's keys (if any) with command-line options applied over them.
  std::optional<std::string> resolve(RunConfig& out) const;

 private:
  // Adds --KEY to `command`, bound to `member`: given on the command line, it overrides the file.
  template <typename T>
  void bindOption(CLI::App& command, const ConfigField& field, T RunConfig::*member);

  RunConfig parsed_;
  std::map<std::string, std::string> modeTexts_;  // modes as typed, by key (map: stable addresses)
  std::string configPath_;
  // For each option: whether it was given, and how to copy its value onto a config (an error
  // naming it when it is no value the option takes).
  std::vector<std::pair<CLI::Option*, std::function<std::optional<std::string>(RunConfig&)>>> bindings_;
};

}  // namespace shardscope::app
