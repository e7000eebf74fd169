#include "engine/strategies/reference_trainer.h"

#include "engine/models/model.h"
#include "engine/models/make_model.h"
#include "engine/strategies/optimizer_factory.h"

namespace shardscope::engine {

ReferenceResult trainSingleProcess(const config::RunConfig& config) {
  auto model = makeModel(config);
  std::vector<at::Tensor> params, trained;
  for (auto& t : model->initParameters(config.seed)) {
    params.push_back(t.set_requires_grad(model->params()[params.size()].trainable));
    if (params.back().requires_grad()) trained.push_back(params.back());
  }
  auto optimizer = makeOptimizer(config, trained);
  ReferenceResult result;
  for (int step = 0; step < config.steps; ++step) {
    auto batch = model->globalBatch(config.seed, step, config.batch);
    auto loss = forwardAll(*model, batch, params);
    loss.backward();
    optimizer->step();
    optimizer->zero_grad(/*set_to_none=*/true);
    result.losses.push_back(loss.item<double>());
  }
  for (size_t i = 0; i < params.size(); ++i) {
    result.parameters[model->params()[i].name] = params[i].detach().clone();
  }
  return result;
}

}  // namespace shardscope::engine
