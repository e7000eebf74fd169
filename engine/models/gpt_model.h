// gpt: token + position embedding, `layers` pre-LayerNorm blocks (causal self-attention, GELU MLP),
// final LayerNorm, LM head (no bias); next-token cross-entropy on synthetic tokens. Under --tp a rank
// computes heads/N of each block's heads and 1/N of its MLP's width (config/tensor_parallel.h).
#pragma once

#include "engine/models/model.h"

namespace shardscope::engine {

class GptModel final : public StagedModel {
 public:
  GptModel(const config::RunConfig& config, const TensorParallelPart& part);
  at::Tensor forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                          const std::vector<at::Tensor>& p) const override;
  // A block recomputed stops before its MLP's output projection (engine/models/unread_output_projection.h).
  at::Tensor recomputeStage(int stage, const at::Tensor& input, const Batch& batch,
                            const std::vector<at::Tensor>& p) const override;
  Batch globalBatch(int64_t seed, int step, int batchSize) const override;

 protected:
  void forEachFullInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const override;

 private:
  // A column-parallel linear's x W^T + b: under --tp its input's gradient summed over the tensor
  // group in backward; under --sequence-parallel x (this rank's tokens) all-gathered first.
  // Under LoRA `adapter` adds its update (under --tp on the same copy of x).
  at::Tensor columnParallel(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            const std::string& label, const LoraPair* adapter = nullptr) const;
  // A row-parallel projection's x W^T + b: under --tp the partial products summed over the tensor
  // group before the bias is added (`label` names that all-reduce); under --sequence-parallel
  // reduce-scattered to this rank's tokens instead.
  at::Tensor rowParallel(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                         const std::string& label, const LoraPair* adapter = nullptr) const;
  // outputRead false: the output projection is left uncomputed (a recomputation for backward).
  at::Tensor block(const at::Tensor& x, const std::vector<at::Tensor>& live, int first, bool outputRead = true) const;
  // `live` with the parameters at `shared` passed through sharedAcrossTensorGroup: their gradients
  // summed over the tensor group in one all-reduce (`label` names it).
  std::vector<at::Tensor> withSharedParameters(const std::vector<at::Tensor>& live, const std::vector<int>& shared,
                                               const std::string& label) const;

  int hidden_, heads_, seq_, vocab_;
  bool lora_;
  bool sequenceParallel_;  // --sequence-parallel under --tp: the residual stream holds this rank's tokens
  static constexpr int kBlockParams = 11;  // a block's own; under LoRA 8 adapters follow them
  int blockParams() const { return kBlockParams + (lora_ ? 8 : 0); }
};

}  // namespace shardscope::engine
