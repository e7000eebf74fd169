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
  std::optional<std::string> resolve(config::RunConfig& out);
  // `error`, found in the config resolve() made, led by the --config file and its keys when the
  // values it names came from there (config file 'run.json', key "slow-rank": --slow-rank 'x:y'
  // is not R:FACTOR, ...): a value is then found where it was written.
  std::string located(const std::string& error) const;

 private:
  // Adds --KEY to `command`, bound to `member`: given on the command line, it overrides the file.
  template <typename T>
  void bindOption(CLI::App& command, const config::ConfigField& field, T config::RunConfig::*member);

  config::RunConfig parsed_;
  std::map<std::string, std::string> modeTexts_;  // modes as typed, by key (map: stable addresses)
  std::string configPath_;
  std::map<std::string, std::string> fileKeys_;  // the keys the file gave, as it spells them, by option name
  // For each option: its name, whether it was given, and how to copy its value onto a config (an
  // error naming it when it is no value the option takes).
  struct Binding {
    std::string key;
    CLI::Option* option;
    std::function<std::optional<std::string>(config::RunConfig&)> apply;
  };
  std::vector<Binding> bindings_;
};

}  // namespace shardscope::app
