// mlp: inp = Linear(features, hidden) + GELU(erf); blocks.i = Linear(hidden, hidden) + GELU;
// head = Linear(hidden, classes); loss = mean cross-entropy. Synthetic float features, int labels.
// Under --tp the linears pair column-then-row over the tensor group (config/tensor_parallel.h).
#pragma once

#include "engine/models/model.h"

namespace shardscope::engine {

class MlpModel final : public StagedModel {
 public:
  MlpModel(const config::RunConfig& config, const TensorParallelPart& part);
  at::Tensor forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                          const std::vector<at::Tensor>& p) const override;
  Batch globalBatch(int64_t seed, int step, int batchSize) const override;

 protected:
  void forEachFullInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const override;

 private:
  // x W^T + b for the linear whose weight is p[w], named `name`, as its tensor-parallel split has it;
  // with `adapter` (LoRA) its update added, under --tp on the same side of the all-reduce.
  at::Tensor linear(const at::Tensor& x, const std::vector<at::Tensor>& p, int w, const std::string& name,
                    const LoraPair* adapter = nullptr) const;

  int features_, hidden_, classes_;
  int blockParams_ = 2;  // a block's parameters in params(): weight, bias (and lora_A, lora_B)
};

}  // namespace shardscope::engine
