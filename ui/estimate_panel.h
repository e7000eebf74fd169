// The Estimate tab: the estimator's predictions, always labelled as such. Left, this
// configuration's closed forms per strategy next to what a matching run measured; right, the seed
// documents' "will it fit" tables for a model of any size, with the seeds' own examples one click
// away and a bar per strategy and GPU count against the GPU's memory.
#pragma once

#include <string>
#include <vector>

#include "estimate/run_prediction.h"
#include "config/run_config.h"
#include "stats/run_stats.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct EstimatePanelState {
  // The what-if inputs, as typed; the defaults are the seeds' Llama-70B example.
  char parameters[32] = "70B";
  float bytesPerParameter[3] = {2, 2, 8};  // weights, gradients, optimizer state
  char worlds[64] = "1,8,16";
  float gpuMemoryGB = 80;
  float trainedPercent = 100;  // of the parameters; LoRA's adapters are well under 1 %
  float reservePercent = 0;    // of each GPU, kept free for what the table leaves out
  // Activations per GPU from a transformer shape (Korthikanti et al. 2022): 0 for none, i for
  // estimate::architecturePresets()[i - 1], one past the presets for customShape ("L,H,A,S").
  int architecture = 0;
  char customShape[48] = "32,4096,32,4096";
  int microBatch = 1;
  int recompute = 0;            // none | selective | full
  int activationPrecision = 0;  // bf16 | fp32
  // The last configuration's predictions (one per strategy) or why there are none: recomputed
  // only when the configuration changes, not every frame.
  std::string predictedFor;
  std::string predictionProblem;
  std::vector<estimate::RunPrediction> predictions;
  std::vector<config::StrategyKind> strategies;  // the predictions' strategies, one each
  // The inverse question for the what-if model, as last drawn: the fewest GPUs of that memory per
  // strategy ("ddp none, ..., full_shard 11").
  std::string fewestGpus;
  // As last drawn: the activations per GPU added to every bar (0: none), and the largest model
  // whose model states fit each GPU count ("8 GPUs: ddp 3.7B, ..., full_shard 40B").
  double activationBytes = 0;
  std::string largestModels;
};

// `stats` are the sessions' per-rank figures (sessionStats), index for index.
void drawEstimatePanel(EstimatePanelState& state, const config::RunConfig& config, const std::vector<Session>& sessions,
                       const std::vector<std::vector<stats::RankStats>>& stats);

// Fills the what-if with a worked example, as its button does: seed-7b, seed-70b,
// seed-70b-activations, seed-lora or zero-figure-1 (a lesson caption's "what_if"). False for
// another name.
bool applyWhatIfExample(EstimatePanelState& state, const std::string& name);

}  // namespace shardscope::ui
