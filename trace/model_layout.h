// The parameters of shardscope's models as names, shapes and FSDP units, in registration order.
// The engine builds its models from this list and the estimator counts from it, so a prediction is
// about exactly the model that runs. No tensors here: the UI links this library too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/run_config.h"

namespace shardscope {

constexpr int kRootUnit = -1;

struct ParamSpec {
  std::string name;             // PyTorch state_dict name, e.g. "blocks.0.weight"
  std::vector<int64_t> shape;
  int unit = kRootUnit;         // FSDP unit: block index, or kRootUnit

  int64_t numel() const;
};

// The parameters of config.model (mlp | gpt) with the config's sizes. The model's forward indexes
// them by position, so the order is part of the model's definition.
std::vector<ParamSpec> modelLayout(const RunConfig& config);

// Elements per FSDP unit: index u for blocks.u, and the root unit last.
std::vector<int64_t> unitElements(const RunConfig& config);

}  // namespace shardscope
