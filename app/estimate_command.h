// `shardscope estimate`: predictions from closed forms, labelled as predictions, as tables or
// JSON. Two questions: what will each rank of this run hold and send (the run options), and does
// a model of a given size fit on so many GPUs (--params; the seed documents' memory tables), with
// its inverses: the fewest GPUs for a model (--fewest-gpus), the largest model for N GPUs
// (--largest-model).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "config/run_config.h"

namespace shardscope::app {

struct EstimateOptions {
  std::string params;  // empty: predict the run the run options describe
  std::string worlds = "1,8,16";
  std::string bytesPerParameter = "2,2,12";
  double gpuMemoryGB = 80;
  double trainedFraction = 1.0;              // with --params: the share that trains (LoRA: e.g. 0.01)
  std::string reserve = "0";                 // a share of each GPU kept free: "10%" or "10"
  bool fewestGpus = false;                   // with --params: the fewest GPUs per strategy
  bool largestModel = false;                 // instead of --params: the largest model per strategy and N
  std::string arch;                          // a preset or "L,H,A,S": adds activations per GPU
  int microBatch = 1;                        // with --arch: samples per GPU per micro-batch
  std::string recompute = "none";            // with --arch: none | selective | full
  std::string activationPrecision = "bf16";  // with --arch: bf16 | fp16 | fp32
  int tensorParallel = 1;                    // with --params or --arch: GPUs per tensor-parallel group
  bool sequenceParallel = false;             // the run's --sequence-parallel (RunConfig), copied in as --tp is
  int gpus = -1;                             // with --params: every (pp, dp, tp) layout of so many GPUs; -1: none
  bool json = false;
};

void addEstimateOptions(CLI::App& command, EstimateOptions& options);

// Whether `options` ask about model states (--params, --arch, --fewest-gpus, --largest-model)
// rather than the run the run options describe.
bool asksAboutModelStates(const EstimateOptions& options);

// `--world N` typed with a model-state question, which counts GPUs by --worlds: taken as
// --worlds N, so the table is for the N asked about; an error where it contradicts --worlds or
// --fewest-gpus (which finds the count itself).
std::optional<std::string> takeWorldAsWorlds(int world, bool worldsGiven, EstimateOptions& options);

// Prints the prediction; returns the exit status (2 with one message for a bad value, which
// `located` leads with the --config file and key a value came from, RunOptions::located).
int runEstimate(const config::RunConfig& config, const EstimateOptions& options,
                const std::function<std::string(const std::string&)>& located);

}  // namespace shardscope::app
