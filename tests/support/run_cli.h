// Runs the real shardscope binary as a user would, capturing its output and exit status.
#pragma once

#include <string>
#include <vector>

namespace shardscope::testing {

struct CliResult {
  int exitCode = -1;   // -1 when killed by a signal or the timeout
  std::string output;  // stdout and stderr, interleaved
  double seconds = 0;
};

// `args` are passed to the binary; `env` entries ("NAME=value") are added to the environment.
CliResult runShardscope(const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {}, int timeoutSeconds = 300);

// Any program: argv[0] is looked up on PATH.
CliResult runCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                     int timeoutSeconds = 300);

// A fresh empty directory under the test temp dir.
std::string freshTempDir(const std::string& name);

}  // namespace shardscope::testing
