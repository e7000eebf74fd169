// The model a run's --model names, built: the one place that knows every model (engine/models/model.h's
// StagedModel is what the strategies and the trainer see).
#pragma once

#include <memory>

#include "config/run_config.h"
#include "engine/models/model.h"

namespace shardscope::engine {

// `part`: this rank's place in its tensor group under --tp; the default is the whole model.
std::unique_ptr<StagedModel> makeModel(const config::RunConfig& config, const TensorParallelPart& part = {});

}  // namespace shardscope::engine
