// The Estimate tab: the estimator's predictions, always labelled as such. Left, this
// configuration's closed forms per strategy next to what a matching run measured; right, the seed
// documents' "will it fit" tables for a model of any size, with the seeds' own examples one click
// away and a bar per strategy and GPU count against the GPU's memory.
#pragma once

#include <string>
#include <vector>

#include "estimate/run_prediction.h"
#include "trace/run_config.h"
#include "trace/run_stats.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct EstimatePanelState {
  // The what-if inputs, as typed; the defaults are the seeds' Llama-70B example.
  char parameters[32] = "70B";
  float bytesPerParameter[3] = {2, 2, 8};  // weights, gradients, optimizer state
  char worlds[64] = "1,8,16";
  float gpuMemoryGB = 80;
  float trainedPercent = 100;  // of the parameters; LoRA's adapters are well under 1 %
  // The last configuration's predictions (one per strategy) or why there are none: recomputed
  // only when the configuration changes, not every frame.
  std::string predictedFor;
  std::string predictionProblem;
  std::vector<estimate::RunPrediction> predictions;
  // The inverse question for the what-if model, as last drawn: the fewest GPUs of that memory per
  // strategy ("ddp none, ..., full_shard 11").
  std::string fewestGpus;
};

// `stats` are the sessions' per-rank figures (sessionStats), index for index.
void drawEstimatePanel(EstimatePanelState& state, const RunConfig& config,
                       const std::vector<Session>& sessions,
                       const std::vector<std::vector<RankStats>>& stats);

// Fills the what-if with a worked example, as its button does: seed-7b, seed-70b, seed-lora or
// zero-figure-1 (a lesson caption's "what_if"). False for another name.
bool applyWhatIfExample(EstimatePanelState& state, const std::string& name);

}  // namespace shardscope::ui
