// The part of a model one pipeline stage runs, as a model of its own: its share of the blocks, and
// the embedding on the first stage, the final norm, head and loss on the last
// (config/pipeline_schedule.h's stageBlocks). A strategy wraps each stage's slice as torchtitan
// applies fully_shard to each stage's module: the slice's root unit is what it holds of the whole
// model's root (the embedding, or the head; nothing on a middle stage), its blocks keep their
// names and unit numbers, so its memory and collectives read as the whole model's would.
#pragma once

#include <memory>
#include <vector>

#include "engine/models/model.h"

namespace shardscope::engine {

class StageSlice final : public StagedModel {
 public:
  // Model stages [firstModelStage, firstModelStage + modelStages) of `whole` (which outlives it):
  // pipeline stage `pipelineStage` of `pipelineStages`, holding the parameters
  // config::stageOfEachParameter gives it.
  StageSlice(const StagedModel& whole, int firstModelStage, int modelStages, int pipelineStage, int pipelineStages);

  // Whether it runs the whole model's first stage (its input is the batch) or last (its output is the loss).
  bool holdsInput() const { return first_ == 0; }
  bool holdsLoss() const { return first_ + numStages() == whole_.numStages(); }

  int numStages() const override { return stageCount_; }
  int stageUnit(int stage) const override;

  at::Tensor forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                          const std::vector<at::Tensor>& p) const override;
  at::Tensor recomputeStage(int stage, const at::Tensor& input, const Batch& batch,
                            const std::vector<at::Tensor>& p) const override;
  Batch globalBatch(int64_t seed, int step, int batchSize) const override {
    return whole_.globalBatch(seed, step, batchSize);
  }

 protected:
  void forEachFullInitialParameter(int64_t seed,
                                   const std::function<void(size_t index, at::Tensor value)>& fn) const override;

 private:
  // `p` (this slice's parameters) placed where the whole model's stages look for them.
  std::vector<at::Tensor> wholeParameters(const std::vector<at::Tensor>& p) const;

  const StagedModel& whole_;
  int first_;
  int stageCount_ = 0;
  std::vector<size_t> wholeIndex_;  // params()[i] is whole_.params()[wholeIndex_[i]]
};

// This rank's slices of `whole`, one per pipeline stage it holds, in stage order.
std::vector<std::unique_ptr<StageSlice>> sliceForPipeline(const StagedModel& whole,
                                                          const std::vector<int>& pipelineStages,
                                                          int pipelineStageCount);

}  // namespace shardscope::engine
