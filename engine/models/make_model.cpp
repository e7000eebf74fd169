#include "engine/models/make_model.h"

#include <stdexcept>

#include "engine/models/gpt_model.h"
#include "engine/models/mlp_model.h"

namespace shardscope::engine {

std::unique_ptr<StagedModel> makeModel(const config::RunConfig& config, const TensorParallelPart& part) {
  switch (config.model) {
    case config::ModelKind::Mlp:
      return std::make_unique<MlpModel>(config, part);
    case config::ModelKind::Gpt:
      return std::make_unique<GptModel>(config, part);
  }
  throw std::logic_error("a ModelKind makeModel does not build");
}

}  // namespace shardscope::engine
