// Quantities as people write them on a command line or in a text box: "70B" parameters, "80" GB,
// "2,2,12" bytes per parameter, "1,8,16" GPUs. Each returns nothing when the text is not one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "estimate/model_state_table.h"

namespace shardscope::estimate {

// A count from 1 to kMaxCount with an optional suffix K, M, B (or G) or T: "7B", "1.5M", "7e9",
// "124000000".
constexpr double kMaxCount = 1e15;  // 1000T parameters
std::optional<double> parseCount(const std::string& text);

// Three non-negative numbers "W,G,O": bytes per parameter of weights, gradients, optimizer state.
std::optional<BytesPerParameter> parseBytesPerParameter(const std::string& text);

// Positive integers separated by commas: "1,8,16".
std::optional<std::vector<int>> parseWorlds(const std::string& text);

// A share of something as a percentage, "10%" or "10", returned as a fraction in [0, 1): 0.1.
std::optional<double> parsePercent(const std::string& text);

}  // namespace shardscope::estimate
