#include "engine/models/stage_slice.h"

#include <algorithm>
#include <stdexcept>

#include "config/pipeline_config.h"
#include "config/pipeline_schedule.h"

namespace shardscope::engine {

StageSlice::StageSlice(const StagedModel& whole, int firstModelStage, int modelStages, int pipelineStage,
                       int pipelineStages)
    : whole_(whole), first_(firstModelStage) {
  numBlocks_ = whole.numUnits();  // unit numbers stay the whole model's
  stageCount_ = modelStages;
  const auto stageOf = config::stageOfEachParameter(whole.params(), whole.numUnits(), pipelineStages);
  for (size_t i = 0; i < whole.params().size(); ++i) {
    const bool held = stageOf[i] == pipelineStage;
    if (!held) continue;
    wholeIndex_.push_back(i);
    params_.push_back(whole.params()[i]);
    splits_.push_back(whole.splitOf(i));
    fullParams_.push_back(whole.fullParams()[i]);
  }
  tp_ = whole.tensorParallel();
}

int StageSlice::stageUnit(int stage) const { return whole_.stageUnit(first_ + stage); }

std::vector<at::Tensor> StageSlice::wholeParameters(const std::vector<at::Tensor>& p) const {
  std::vector<at::Tensor> out(whole_.params().size());
  for (size_t i = 0; i < wholeIndex_.size(); ++i) out[wholeIndex_[i]] = p[i];
  return out;
}

at::Tensor StageSlice::forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                                    const std::vector<at::Tensor>& p) const {
  return whole_.forwardStage(first_ + stage, input, batch, wholeParameters(p));
}

at::Tensor StageSlice::recomputeStage(int stage, const at::Tensor& input, const Batch& batch,
                                      const std::vector<at::Tensor>& p) const {
  return whole_.recomputeStage(first_ + stage, input, batch, wholeParameters(p));
}

void StageSlice::forEachFullInitialParameter(int64_t seed,
                                             const std::function<void(size_t index, at::Tensor value)>& fn) const {
  size_t next = 0;  // wholeIndex_ ascends, as the whole model streams
  whole_.forEachFullInitialParameter(seed, [&](size_t i, at::Tensor value) {
    if (next < wholeIndex_.size() && wholeIndex_[next] == i) fn(next++, std::move(value));
  });
}

std::vector<std::unique_ptr<StageSlice>> sliceForPipeline(const StagedModel& whole,
                                                          const std::vector<int>& pipelineStages,
                                                          int pipelineStageCount) {
  const int blocks = whole.numUnits();
  if (blocks < pipelineStageCount) {
    throw std::runtime_error(std::to_string(pipelineStageCount) +
                             " pipeline stages need as many blocks; the model has " + std::to_string(blocks));
  }
  const auto split = config::stageBlocks(blocks, pipelineStageCount);
  std::vector<std::unique_ptr<StageSlice>> out;
  for (int k : pipelineStages) {
    // Model stage 0 is the embedding, 1..L the blocks, L + 1 the head: stage k's blocks, and the
    // embedding before the first stage's, the head after the last's.
    const int first = k == 0 ? 0 : 1 + split[k].first;
    const int last = k == pipelineStageCount - 1 ? blocks + 1 : split[k].first + split[k].count;
    out.push_back(std::make_unique<StageSlice>(whole, first, last - first + 1, k, pipelineStageCount));
  }
  return out;
}

}  // namespace shardscope::engine
