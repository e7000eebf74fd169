// Runs the real shardscope binary as a user would, capturing its output and exit status.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope::testing {

struct CliResult {
  int exitCode = -1;   // -1 when killed by a signal or the timeout
  std::string output;  // stdout and stderr, interleaved
  double seconds = 0;
};

// `args` are passed to the binary; `env` entries ("NAME=value") are added to the environment.
CliResult runShardscope(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                        int timeoutSeconds = 300);

// A GPT small enough for multi-rank tests to run in a second or two: 3 blocks of hidden 20 (4
// heads), vocabulary 37, 6 tokens per sample, global batch 4, 2 steps, 2 ranks.
config::RunConfig tinyGptConfig();

// The options that give `config` on the command line ("--model", "gpt", ...): run_config's JSON
// keys are the option names. Output paths are not in that JSON: add --export etc. yourself.
std::vector<std::string> optionsOf(const config::RunConfig& config);

// "run", the options of `config`, then `extra` (e.g. {"--summary", path}): a `shardscope run` of it.
std::vector<std::string> runArgsOf(const config::RunConfig& config, const std::vector<std::string>& extra = {});

// Any program: argv[0] is looked up on PATH.
CliResult runCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                     int timeoutSeconds = 300);

// A job as torchrun starts it, without torchrun: one `shardscope worker` per rank of
// config.world, each with torchrun's variables (a fresh MASTER_PORT on loopback), the options of
// `config`, then `extraArgs`; rank r's environment adds `env` and rankEnv[r] (where given).
std::vector<CliResult> runWorkerJob(const config::RunConfig& config, const std::vector<std::string>& extraArgs,
                                    const std::vector<std::vector<std::string>>& rankEnv = {},
                                    const std::vector<std::string>& env = {});

// Waits (up to `seconds`) until something accepts connections on the loopback `port`; false if
// nothing did. The probe connects and goes at once.
bool waitForLoopbackListener(int port, int seconds = 30);

// A loopback port nothing listens on now, below the kernel's ephemeral range: for a MASTER_PORT.
int freeLoopbackPort();

// A fresh empty directory under the test temp dir.
std::string freshTempDir(const std::string& name);

// A file's whole contents as written ("" when it cannot be read).
std::string fileContents(const std::string& path);

}  // namespace shardscope::testing
