// mlp: inp = Linear(features, hidden) + GELU(erf); blocks.i = Linear(hidden, hidden) + GELU;
// head = Linear(hidden, classes); loss = mean cross-entropy. Synthetic float features, int labels.
#pragma once

#include "engine/models/model.h"

namespace shardscope {

class MlpModel final : public StagedModel {
 public:
  explicit MlpModel(const RunConfig& config);
  at::Tensor forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                          const std::vector<at::Tensor>& p) const override;
  void forEachInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const override;
  Batch globalBatch(int64_t seed, int step, int batchSize) const override;

 private:
  int features_, hidden_, classes_;
  int blockParams_ = 2;  // a block's parameters in params(): weight, bias (and lora_A, lora_B)
};

}  // namespace shardscope
