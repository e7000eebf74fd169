// DDP (NO_SHARD, ZeRO-0), after c10d's reducer.cpp: every rank holds full parameters, gradients and
// optimizer state. Gradients are packed into buckets filled in reverse parameter order (the first
// bucket small, the rest --bucket-cap-mb); a post-accumulate hook on each parameter's grad
// accumulator counts down its bucket, and a bucket whose gradients are all ready is all-reduced
// asynchronously during backward. Buckets launch strictly in index order so that every rank issues
// the same collectives in the same order (otherwise ranks could deadlock). On a GPU the all-reduce
// runs on the communication stream while backward goes on (engine/collective_stream.h).
//
// Mixed precision (--precision bf16): the fp32 parameters are the master weights the optimizer
// updates; the model computes with bf16 copies of them (refreshed after every optimizer step), and
// the bf16 gradients are cast into fp32 buckets, so the all-reduce and the update are fp32.
#pragma once

#include <torch/csrc/autograd/function.h>
#include <torch/optim/optimizer.h>

#include "engine/strategy.h"

namespace shardscope {

class DdpStrategy final : public Strategy {
 public:
  DdpStrategy(const RunConfig& config, const StagedModel& model, Communicator& comm,
              const at::Device& device);
  ~DdpStrategy() override;

  const std::vector<at::Tensor>& liveParameters() const override {
    return compute_.empty() ? params_ : compute_;
  }
  void finishBackward() override;
  void step() override;
  std::map<std::string, at::Tensor> fullParameters() override;
  std::vector<HeldTensor> heldTensors() const override;

  // Bucket layout, for tests and reports: parameter indices per bucket, in launch order.
  std::vector<std::vector<int>> bucketLayout() const;

 private:
  struct Bucket {
    std::vector<int> params;      // model parameter indices, reverse registration order
    std::vector<int64_t> offsets; // element offset of each parameter in `buffer`
    at::Tensor buffer;            // flat gradients, all-reduced in place
    int pending = 0;              // gradients not yet ready this step
    std::unique_ptr<PendingCollective> work;
  };

  void onGradReady(int param);
  void refreshComputeCopies();
  void launchReadyBuckets();

  const StagedModel& model_;
  Communicator& comm_;
  std::vector<at::Tensor> params_;   // fp32, what the optimizer updates
  std::vector<at::Tensor> compute_;  // bf16 copies the model computes with; empty under fp32
  std::vector<Bucket> buckets_;
  std::vector<int> bucketOf_;  // parameter index -> bucket index
  std::vector<std::shared_ptr<torch::autograd::Node>> gradAccumulators_;
  int nextToLaunch_ = 0;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// Reducer's assignment: walk parameters in reverse order; close a bucket once it reaches its cap
// (1 MiB for the first, capBytes after). Returns parameter indices per bucket.
std::vector<std::vector<int>> assignBuckets(const std::vector<int64_t>& paramBytes,
                                            int64_t firstCapBytes, int64_t capBytes);

}  // namespace shardscope
