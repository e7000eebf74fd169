// A run diff (run_diff.h) on the terminal, and as JSON for tools.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "stats/run_diff.h"

namespace shardscope::stats {

// A collective's time change, how much of it no compute hid: "exposed +39.0 ms", "hidden by
// compute" (none of it exposed in either run); "" for any other figure.
std::string diffExposureText(const DiffChange& change);

// The steps compared, the verdict, then the `top` largest changes, then what was not aligned.
void printRunDiff(std::FILE* out, const RunDiff& diff, const DiffSide& a, const DiffSide& b, size_t top = 15);

nlohmann::json runDiffJson(const RunDiff& diff, const DiffSide& a, const DiffSide& b);

}  // namespace shardscope::stats
