// The model a run's --model names, built: the one place that knows every model (engine/models/model.h's
// StagedModel is what the strategies and the trainer see).
#pragma once

#include <memory>

#include "config/run_config.h"
#include "engine/models/model.h"

namespace shardscope {

std::unique_ptr<StagedModel> makeModel(const RunConfig& config);

}  // namespace shardscope
