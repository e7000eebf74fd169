// DDP (ZeRO-0), after PyTorch's DistributedDataParallel: every rank holds full parameters,
// gradients and optimizer state; gradients are averaged by bucketed all-reduces during backward
// (engine/strategies/gradient_buckets.h). no_shard (FSDP1's NO_SHARD) is the same with one bucket
// per unit: FSDP's wrapper with nothing divided.
//
// Mixed precision (--precision bf16): the fp32 parameters are the master weights the optimizer
// updates; the model computes with bf16 copies of them (refreshed after every optimizer step), and
// the bf16 gradients are cast into fp32 buckets, so the all-reduce and the update are fp32.
#pragma once

#include <torch/optim/optimizer.h>

#include "engine/strategies/gradient_buckets.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

class DdpStrategy final : public Strategy {
 public:
  DdpStrategy(const config::RunConfig& config, const StagedModel& model, Communicator& comm, const at::Device& device,
              StepGate& gate);
  ~DdpStrategy() override;

  const std::vector<at::Tensor>& liveParameters() const override { return compute_.empty() ? params_ : compute_; }
  void finishBackward() override;
  void setGradientSync(bool sync) override {
    if (buckets_) buckets_->setEnabled(sync);
  }
  void step() override;
  std::map<std::string, at::Tensor> fullParameters() override;
  std::vector<HeldTensor> heldTensors() const override;

 private:
  void refreshComputeCopies();

  const StagedModel& model_;
  std::vector<at::Tensor> params_;   // fp32, what the optimizer updates (frozen ones: bf16 under bf16)
  std::vector<at::Tensor> compute_;  // bf16 copies the model computes with (a frozen one is its own
                                     // parameter); empty under fp32
  std::unique_ptr<GradientBuckets> buckets_;  // null where there is nothing to average
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  bool optimizerStateAssigned_ = false;  // its state counted per unit (after the first step)
};

}  // namespace shardscope::engine
