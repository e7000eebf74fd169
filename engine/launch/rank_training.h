// What one rank trains: the whole model under one strategy, or under --pp the pipeline stages it
// holds, each under its own (engine/strategies/pipeline_rank.h). The rank's loop sees one step, one
// inventory and one set of final parameters either way.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "engine/strategies/pipeline_rank.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

class RankTraining {
 public:
  RankTraining(const config::RunConfig& config, std::unique_ptr<StagedModel> model, const ProcessMesh& mesh,
               const at::Device& device, StepGate& gate);
  ~RankTraining();

  const StagedModel& model() const { return *model_; }
  // One step on the rank's batch; its loss, the mean over that batch, or 0 on a pipeline rank that
  // does not hold the last stage (its ranks' sum over the world / --pp is the global mean).
  at::Tensor step(const Batch& local);
  std::vector<HeldTensor> heldTensors() const;
  // The parameters this rank trains, gathered over its data ranks (a collective of them): the whole
  // model's, or under --pp its stages'.
  std::map<std::string, at::Tensor> fullParameters();
  // The whole model's parameters from `joined` (fullParameters with the tensor groups' slices
  // joined): as they are without --pp, gathered from every stage under it (a collective of `world`).
  std::map<std::string, at::Tensor> wholeParameters(std::map<std::string, at::Tensor> joined, Communicator& world);

 private:
  config::RunConfig config_;
  std::unique_ptr<StagedModel> model_;
  std::unique_ptr<Strategy> strategy_;      // without --pp
  std::unique_ptr<PipelineRank> pipeline_;  // under --pp
};

}  // namespace shardscope::engine
