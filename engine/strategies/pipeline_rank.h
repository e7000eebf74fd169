// One rank of a pipeline (--pp): the stages it holds, each a slice of the model wrapped in a
// strategy of its own over the stage's data ranks (as torchtitan applies fully_shard to each
// stage's module), and the schedule's list of actions (config/pipeline_schedule.h) it runs every
// step: forwards and backwards of micro-batches, activations and their gradients sent to and
// received from the ranks of the neighbouring stages by c10d point-to-point over the pipe group.
//
// A receive is posted where the list puts it and waited for at the start of the action that needs
// it (inside that action's span, as in PyTorch's runtime); a send is issued just after the action
// that made it and waited for at the end of the step, so a rank never waits on its own sends and
// the schedule's order alone decides who waits for whom (as PyTorch's schedules run).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "config/pipeline_schedule.h"
#include "config/run_config.h"
#include "engine/models/stage_slice.h"
#include "engine/strategies/strategy.h"
#include "engine/strategies/train_step.h"

namespace shardscope::engine {

class PipelineRank {
 public:
  PipelineRank(const config::RunConfig& config, const StagedModel& whole, const ProcessMesh& mesh,
               const at::Device& device, StepGate& gate);
  ~PipelineRank();

  // One step on this data rank's batch, every micro-batch through the schedule, then each
  // stage's optimizer step. The loss (the mean over micro-batches) on the rank that holds the last
  // stage; an undefined tensor on the others.
  at::Tensor step(const Batch& local);

  const std::vector<int>& stages() const { return stages_; }
  bool holdsLoss() const;
  // What this rank holds, over its stages.
  std::vector<HeldTensor> heldTensors() const;
  // Its stages' full parameters, gathered over their data ranks (a collective of those ranks).
  std::map<std::string, at::Tensor> fullParameters();
  // The whole model's parameters (CPU, fp32) on every rank: `mine`, this rank's stages' whole
  // parameters, and each other one broadcast over `world` from the first rank of the stage that
  // holds it. A collective of every rank (--export's final.pt).
  std::map<std::string, at::Tensor> wholeParameters(const StagedModel& whole, std::map<std::string, at::Tensor> mine,
                                                    Communicator& world);

 private:
  struct Stage {
    int index = 0;  // the pipeline stage
    std::unique_ptr<StageSlice> model;
    std::unique_ptr<Strategy> strategy;
  };
  // Where one step's tensors wait between the actions that make and use them.
  struct StepState;

  Stage& stageAt(int pipelineStage);
  void run(const config::PipeAction& action, StepState& state);
  void forward(const config::PipeAction& action, StepState& state);
  void backward(const config::PipeAction& action, StepState& state);         // B, or zero bubble's I
  void backwardWeights(const config::PipeAction& action, StepState& state);  // zero bubble's W
  void receive(const config::PipeAction& action, StepState& state);          // posts it
  // Waits for the receive a compute action needs, if one was posted for it.
  void awaitReceived(const config::PipeAction& action, StepState& state);
  void send(const config::PipeAction& action, StepState& state);
  void sendAndReceive(const config::PipeAction& sent, const config::PipeAction& received, StepState& state);
  int peerOf(const config::PipeAction& transfer) const;  // the rank a transfer goes to or comes from
  at::Tensor receiveBuffer(const config::PipeAction& received, StepState& state);
  void keepReceived(const config::PipeAction& received, at::Tensor buffer, StepState& state);
  at::Tensor boundaryBuffer(const Stage& stage, int64_t rows) const;

  config::RunConfig config_;
  config::PipelineShape shape_;
  Communicator& pipe_;
  StepGate& gate_;
  at::Device device_;
  std::vector<int> stages_;
  std::vector<Stage> held_;
  std::vector<config::PipeAction> actions_;
  std::vector<bool> batchedWithNext_;  // per action: it and the next go as one batch (where the backend batches)
};

}  // namespace shardscope::engine
