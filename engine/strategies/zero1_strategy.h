// ZeRO-1 (PyTorch: DistributedDataParallel with ZeroRedundancyOptimizer): parameters and gradients
// as in DDP, full on every rank, averaged by the same bucketed all-reduce during backward; the
// optimizer state is sharded. Each rank owns a contiguous 1/N slice of the flattened parameters
// (padded to a multiple of N), keeps optimizer state for that slice only, updates it, and an
// all-gather after the step hands every rank the others' updated slices.
//
// The model's parameters are views of one flat buffer, so the all-gather refills them in place.
// Under fp32 the owned slice is a view of that buffer too: the optimizer updates it in place.
// Under --precision bf16 the flat buffer is bf16 (what the model computes with, refreshed by the
// all-gather each step) and the owned slice has an fp32 master copy, as DeepSpeed's stage 1 keeps
// fp32 master weights only for its partition; gradients are reduced in fp32.
#pragma once

#include <torch/optim/optimizer.h>

#include "engine/strategies/gradient_buckets.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

class Zero1Strategy final : public Strategy {
 public:
  Zero1Strategy(const config::RunConfig& config, const StagedModel& model, Communicator& comm, const at::Device& device,
                StepGate& gate);
  ~Zero1Strategy() override;

  const std::vector<at::Tensor>& liveParameters() const override { return params_; }
  void finishBackward() override;
  void setGradientSync(bool sync) override { buckets_->setEnabled(sync); }
  void step() override;
  std::map<std::string, at::Tensor> fullParameters() override;
  std::vector<HeldTensor> heldTensors() const override;

 private:
  at::Tensor ownedSliceOf(const at::Tensor& flat) const;
  // Copies the part of parameter i's flat values (all of it, `values`) that lies in this rank's
  // slice into `slice`, a tensor of sliceNumel_ elements.
  void copyOwnedPart(at::Tensor& slice, int i, const at::Tensor& values) const;
  // [begin, end) ranges of the slice that split it where parameters begin and end (the padding
  // after the last parameter is a range of its own): together they cover the slice once.
  std::vector<std::pair<int64_t, int64_t>> segmentsOfSlice() const;

  const StagedModel& model_;
  Communicator& comm_;
  int64_t sliceNumel_ = 0;               // padded elements / N
  int64_t flatNumel_ = 0;                // trained elements, unpadded
  std::vector<int64_t> flatOffsets_;     // each parameter's first element in the flat buffer; -1 frozen
  at::Tensor flat_;                      // every trained parameter, compute dtype, padded to N's multiple
  std::map<size_t, at::Tensor> frozen_;  // frozen parameters (LoRA), whole, in the compute dtype: never stepped
  std::vector<at::Tensor> params_;       // views of flat_: what the model computes with
  at::Tensor master_;                    // this rank's slice in fp32: a view of flat_ under fp32
  at::Tensor masterGrad_;                // its averaged gradient, from the buckets until the step
  // What the optimizer steps: master_ cut where parameters begin and end, views that update it in
  // place. PyTorch's ZeroRedundancyOptimizer hands its optimizer whole parameters, and LibTorch's
  // CPU Adam makes its temporaries one tensor at a time: one flat slice would make them as large
  // as the whole slice, doubling the optimizer's peak for the length of the step.
  std::vector<std::pair<int64_t, int64_t>> segments_;
  std::vector<at::Tensor> masterSegments_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace shardscope::engine
