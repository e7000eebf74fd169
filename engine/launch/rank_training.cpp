#include "engine/launch/rank_training.h"

namespace shardscope::engine {

RankTraining::RankTraining(const config::RunConfig& config, std::unique_ptr<StagedModel> model, const ProcessMesh& mesh,
                           const at::Device& device, StepGate& gate)
    : config_(config), model_(std::move(model)) {
  if (config.pp > 1) {
    pipeline_ = std::make_unique<PipelineRank>(config, *model_, mesh, device, gate);
  } else {
    strategy_ = makeStrategy(config, *model_, mesh, device, gate);
  }
}

RankTraining::~RankTraining() = default;

at::Tensor RankTraining::step(const Batch& local) {
  if (!pipeline_) {
    return trainStep(*model_, *strategy_, local,
                     {config_.accumulate, config_.activationCheckpointing == config::Checkpointing::Blocks});
  }
  at::Tensor loss = pipeline_->step(local);
  return loss.defined() ? loss : at::zeros({}, local.x.options().dtype(at::kFloat));
}

std::vector<HeldTensor> RankTraining::heldTensors() const {
  return pipeline_ ? pipeline_->heldTensors() : strategy_->heldTensors();
}

std::map<std::string, at::Tensor> RankTraining::fullParameters() {
  return pipeline_ ? pipeline_->fullParameters() : strategy_->fullParameters();
}

std::map<std::string, at::Tensor> RankTraining::wholeParameters(std::map<std::string, at::Tensor> joined,
                                                                Communicator& world) {
  return pipeline_ ? pipeline_->wholeParameters(*model_, std::move(joined), world) : joined;
}

}  // namespace shardscope::engine
