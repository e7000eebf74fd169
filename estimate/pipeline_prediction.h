// Predictions for a pipeline (--pp), not measurements: per pipeline rank, the parameters of its
// stages and their model states under the strategy over its stage's data ranks, the activations it
// holds at most (each stage's share of a micro-batch's, times the micro-batches its schedule keeps
// in flight, walked along the schedule's own action list), the bytes it sends to other stages per
// step; and the bubble by the schedule's closed form. docs/estimate.md writes the forms out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/pipeline_schedule.h"
#include "config/run_config.h"

namespace shardscope::estimate {

struct PipelineRankPrediction {
  int pipeRank = 0;
  std::vector<int> stages;
  int64_t parameters = 0;         // of its stages (under --tp, before the tensor split)
  int64_t modelStateBytes = 0;    // its share of the whole model's, under the strategy at dp x tp ranks
  int peakStageMicroBatches = 0;  // (stage, micro-batch) activations held at once at most
  int peakMicroBatches = 0;       // the micro-batches with any of them held, at most (the summary's count)
  int64_t activationBytes = 0;    // gpt: their bytes at that moment; 0 for the mlp (not predicted)
  int64_t sentBytesPerStep = 0;   // activations and gradients to other stages' ranks
};

struct PipelinePrediction {
  config::PipelineShape shape;
  config::BubbleForm bubble;                  // over the ideal time
  int64_t messageBytes = 0;                   // one micro-batch's activation (or its gradient) between stages
  std::vector<PipelineRankPrediction> ranks;  // by pipeline rank
};

// For a configuration that validate() accepts with --pp 2 or more.
PipelinePrediction predictPipeline(const config::RunConfig& config);

// One layout of `gpus` GPUs as (pp, dp, tp), for the 3-D question: model states per GPU with each
// stage's share of the model split t ways, under ZeRO-1 over dp (Megatron's distributed optimizer:
// weights and gradients whole per stage and tensor slice, the optimizer state divided) and under
// full_shard (everything divided by dp, torchtitan's FSDP per stage); the activations of 1F1B's first
// stage (P micro-batches of its L/P layers in flight: about one whole micro-batch's, over t); the
// bubble at M micro-batches.
struct LayoutPrediction {
  int pp = 1, dp = 1, tp = 1;
  double zero1Bytes = 0, fullShardBytes = 0, activationBytes = 0;
  double bubbleOverIdeal = 0;  // (P-1)/M
};
// Every layout with tp in 1, 2, 4, 8 (within a node), pp x tp dividing the GPUs and pp at most M
// (1F1B needs M >= P), by pp then tp.
// `activationBytesPerMicroBatch`: the whole model's for one micro-batch on one GPU (0: left out).
std::vector<LayoutPrediction> predictLayouts(double parameters, double weightBytes, double gradBytes,
                                             double optimizerBytes, int gpus, int microBatches,
                                             double activationBytesPerMicroBatch);

}  // namespace shardscope::estimate
