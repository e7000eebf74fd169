// The single-process baseline every strategy must match: the whole global batch, plain autograd,
// the same optimizer, no communication.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "config/run_config.h"

namespace shardscope::engine {

struct ReferenceResult {
  std::map<std::string, at::Tensor> parameters;  // after config.steps steps
  std::vector<double> losses;                    // per step
};

ReferenceResult trainSingleProcess(const config::RunConfig& config);

}  // namespace shardscope::engine
