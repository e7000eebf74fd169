// `shardscope diff A B`: two recordings that `view` opens, aligned and diffed (stats/run_diff.h),
// with a verdict and an exit status for CI: 0 no change or better, 1 regression, 2 bad input.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace shardscope::app {

struct DiffChoice {
  std::vector<std::string> paths;  // A then B
  std::string gate = "5%";
  int warmup = 1;
  std::string jsonPath;
  int top = 15;
};

void addDiffOptions(CLI::App& command, DiffChoice& choice);
int runDiff(const DiffChoice& choice);

}  // namespace shardscope::app
