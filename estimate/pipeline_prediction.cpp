#include "estimate/pipeline_prediction.h"

#include <algorithm>
#include <set>

#include "config/model_layout.h"
#include "config/pipeline_config.h"
#include "config/pipeline_transfers.h"
#include "estimate/activation_memory.h"
#include "estimate/model_state_table.h"
#include "estimate/run_prediction.h"

namespace shardscope::estimate {

namespace {

using config::PipeActionKind;

// The whole model at one stage's data and tensor ranks: what the strategy holds of all of it there.
config::RunConfig wholeModelAtOneStage(const config::RunConfig& c) {
  config::RunConfig whole = c;
  whole.world = c.world / c.pp;
  whole.pp = 1;
  whole.microbatches = whole.stagesPerRank = 0;
  whole.schedule = config::RunConfig().schedule;
  return whole;
}

// A stage's share of one micro-batch's activations: its blocks', and the embedding's or the head's.
std::vector<int64_t> activationBytesPerStage(const config::RunConfig& c, const config::PipelineShape& shape) {
  std::vector<int64_t> out(static_cast<size_t>(shape.stages()), 0);
  if (c.model != config::ModelKind::Gpt) return out;
  config::RunConfig microBatch = wholeModelAtOneStage(c);
  microBatch.accumulate = shape.microBatches;  // one micro-batch's rows, as gptSavedActivations divides them
  const GptActivations a = gptSavedActivations(microBatch);
  const auto blocks = config::stageBlocks(c.layers, shape.stages());
  for (int k = 0; k < shape.stages(); ++k) {
    out[static_cast<size_t>(k)] = blocks[static_cast<size_t>(k)].count * a.perBlock + (k == 0 ? a.embedding : 0) +
                                  (k == shape.stages() - 1 ? a.head : 0);
  }
  return out;
}

// Walks `rank`'s compute actions: a forward keeps its stage's activations of its micro-batch until
// its backward (or its W) frees them. The most (stage, micro-batch) pairs held, and their bytes.
void peakHeld(const config::PipelineShape& shape, int rank, const std::vector<int64_t>& perStage,
              PipelineRankPrediction& out) {
  config::HeldActivations held;
  for (const auto& a : config::computeActions(shape, rank)) {
    held.run(a);
    int64_t bytes = 0;
    for (const auto& [stage, batch] : held.stageMicroBatches()) bytes += perStage[static_cast<size_t>(stage)];
    out.peakStageMicroBatches = std::max(out.peakStageMicroBatches, static_cast<int>(held.stageMicroBatches().size()));
    out.peakMicroBatches = std::max(out.peakMicroBatches, held.microBatches());
    out.activationBytes = std::max(out.activationBytes, bytes);
  }
}

}  // namespace

PipelinePrediction predictPipeline(const config::RunConfig& c) {
  PipelinePrediction out;
  out.shape = config::pipelineShapeOf(c);
  out.bubble = config::bubbleClosedForm(out.shape);
  const auto rows = static_cast<int64_t>(c.batch / config::dataRankCount(c) / out.shape.microBatches);
  int64_t elements = 1;
  for (int64_t d : config::boundaryShape(c, rows)) elements *= d;
  out.messageBytes = elements * (c.precision == config::Precision::Bf16 ? 2 : 4);
  const auto params = config::modelLayout(c);
  const auto stageOf = config::stageOfEachParameter(params, c.layers, out.shape.stages());
  int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  const int64_t wholeStates = predictRun(wholeModelAtOneStage(c)).modelStateBytes();
  const auto perStage = activationBytesPerStage(c, out.shape);
  const auto lists = config::everyRanksActions(out.shape);
  for (int r = 0; r < out.shape.ranks; ++r) {
    PipelineRankPrediction rank;
    rank.pipeRank = r;
    rank.stages = config::stagesOfRank(out.shape, r);
    for (size_t i = 0; i < params.size(); ++i) {
      if (config::rankOfStage(out.shape, stageOf[i]) == r) rank.parameters += params[i].numel();
    }
    rank.modelStateBytes = total > 0 ? wholeStates * rank.parameters / total : 0;
    peakHeld(out.shape, r, perStage, rank);
    for (const auto& a : lists[static_cast<size_t>(r)]) {
      if (a.kind == PipeActionKind::SendActivation || a.kind == PipeActionKind::SendGradient) {
        rank.sentBytesPerStep += out.messageBytes;
      }
    }
    out.ranks.push_back(std::move(rank));
  }
  return out;
}

std::vector<LayoutPrediction> predictLayouts(double parameters, double weightBytes, double gradBytes,
                                             double optimizerBytes, int gpus, int microBatches,
                                             double activationBytesPerMicroBatch) {
  std::vector<LayoutPrediction> out;
  for (int pp = 1; pp <= std::min(gpus, std::max(1, microBatches)); ++pp) {  // 1F1B needs M >= P
    for (int tp : {1, 2, 4, 8}) {
      if (gpus % (pp * tp) != 0) continue;
      LayoutPrediction l;
      l.pp = pp, l.tp = tp, l.dp = gpus / (pp * tp);
      const double slice = parameters / (pp * tp);  // a GPU's share before the data dimension
      l.zero1Bytes = slice * (weightBytes + gradBytes + optimizerBytes / l.dp);
      l.fullShardBytes = slice * (weightBytes + gradBytes + optimizerBytes) / l.dp;
      l.activationBytes = activationBytesPerMicroBatch / tp;
      l.bubbleOverIdeal = static_cast<double>(pp - 1) / std::max(1, microBatches);
      out.push_back(l);
    }
  }
  return out;
}

}  // namespace shardscope::estimate
