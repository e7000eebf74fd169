#include "app/estimate_command.h"

#include <cstdio>
#include <optional>

#include "estimate/activation_memory.h"
#include "estimate/parse_quantity.h"
#include "estimate/pipeline_report.h"
#include "estimate/model_state_report.h"
#include "estimate/run_prediction.h"
#include "estimate/run_prediction_report.h"
#include "files/user_json.h"

namespace shardscope::app {

namespace {

int badValue(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

using Located = std::function<std::string(const std::string&)>;

int estimateRun(const config::RunConfig& config, bool json, const Located& located) {
  // The batch and the output paths a --config file may carry are not its business.
  // Every strategy is predicted: --shard-group-size is checked as the hybrid ones take it.
  config::RunConfig checked = config;
  if (config.shardGroupSize != 0) checked.strategy = config::StrategyKind::HybridShard;
  // --offload cpu is the sharded strategies': checked as one of them takes it (ddp and zero1 are
  // predicted without it).
  if (config.offload == config::Offload::Cpu && !config::traitsOf(checked.strategy).shardsParameters) {
    checked.strategy = config::StrategyKind::FullShard;
  }
  if (auto err = estimate::predictionProblem(checked)) return badValue(located(*err));
  if (config.pp > 1) {  // the run's pipeline ranks, under its own strategy
    estimate::printPipelinePrediction(stdout, config, json);
    return 0;
  }

  const auto predictions = estimate::predictEveryStrategy(config);
  if (json) {
    estimate::printRunPredictionsJson(stdout, config, predictions);
  } else {
    estimate::printRunPredictions(stdout, config, predictions);
  }
  return 0;
}

// The --params/--worlds/--bytes-per-param/... case, or the message that says which value is wrong.
std::string presetNames() {
  std::string names;
  for (const auto& p : estimate::architecturePresets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

// --arch, --micro-batch and --recompute: activations per GPU (and the preset's parameter count).
std::optional<std::string> activationsOf(const EstimateOptions& o, estimate::ModelStateCase& c,
                                         std::optional<estimate::ArchitecturePreset>& arch) {
  if (o.arch.empty()) return std::nullopt;
  arch = estimate::parseArchitecture(o.arch);
  if (!arch) {
    return "--arch '" + o.arch + "' is not an architecture: name a preset (" + presetNames() +
           ") or give layers,hidden,heads,sequence, e.g. --arch 32,4096,32,4096";
  }
  const auto recompute = estimate::parseRecompute(o.recompute);
  if (!recompute) {
    return "--recompute '" + o.recompute +
           "' is not a recomputation: choose none, selective (the attention "
           "core) or full (every layer from its input)";
  }
  if (o.microBatch < 1) {
    return "--micro-batch " + std::to_string(o.microBatch) + " is not a number of samples: give 1 or more";
  }
  const auto elementBytes = estimate::parseActivationPrecision(o.activationPrecision);
  if (!elementBytes) {
    return "--activation-precision '" + o.activationPrecision +
           "' is not a precision: choose bf16 or fp16 "
           "(2 bytes per value, the paper's) or fp32 (4)";
  }
  if (o.largestModel) {
    return "--largest-model searches over parameter counts, and --arch '" + o.arch +
           "' fixes the shape; "
           "drop --arch (the answer is then for model states only)";
  }
  auto shape = arch->shape;
  shape.microBatch = o.microBatch;
  c.activationBytes = estimate::transformerActivationBytes(shape, *recompute, *elementBytes, c.tensorParallel);
  if (o.params.empty()) c.parameters = arch->parameters;
  return std::nullopt;
}

// --tp and --sequence-parallel: the degree, and the GPU counts it divides (a world that is not a
// multiple of it is left out, with a note; none left is an error).
std::optional<std::string> tensorParallelOf(const EstimateOptions& o, estimate::ModelStateCase& c) {
  const std::string t = std::to_string(o.tensorParallel);
  if (o.tensorParallel < 1 || o.tensorParallel > 4096) {
    return "--tp " + t +
           " is not a tensor-parallel degree: give the GPUs of one tensor-parallel group, 1 to 4096 "
           "(8: a node of 8 GPUs, as Megatron and torchtitan lay it out)";
  }
  if (o.sequenceParallel && o.tensorParallel == 1) {
    return "--sequence-parallel splits what tensor parallelism leaves whole along the sequence; it needs --tp 2 or "
           "more (e.g. --tp 8 --sequence-parallel)";
  }
  c.tensorParallel = {o.tensorParallel, o.sequenceParallel};
  if (o.tensorParallel == 1 || o.fewestGpus) return std::nullopt;
  std::vector<int> kept;
  std::string left;
  for (int n : c.worlds) {
    if (n % o.tensorParallel == 0) {
      kept.push_back(n);
    } else {
      left += (left.empty() ? "" : ",") + std::to_string(n);
    }
  }
  if (kept.empty()) {
    return "--worlds " + o.worlds + " has no multiple of --tp " + t +
           ": each GPU count is whole tensor-parallel "
           "groups of " +
           t + " GPUs; give e.g. --worlds " + t + "," + std::to_string(8 * o.tensorParallel);
  }
  if (!left.empty())
    std::fprintf(stderr, "shardscope: note: --worlds %s left out: not multiples of --tp %s\n", left.c_str(), t.c_str());
  c.worlds = kept;
  return std::nullopt;
}

std::optional<std::string> modelStateCaseOf(const EstimateOptions& o, estimate::ModelStateCase& c,
                                            std::optional<estimate::ArchitecturePreset>& arch) {
  if (o.largestModel) {
    if (!o.params.empty()) {
      return "--largest-model finds the parameter count; drop --params '" + o.params +
             "' (or drop "
             "--largest-model to see what " +
             o.params + " parameters need)";
    }
  } else if (o.params.empty() && !o.arch.empty()) {
    // The preset's own count, set below; a custom shape needs --params.
    if (auto preset = estimate::parseArchitecture(o.arch); preset && preset->parameters <= 0) {
      return "--arch '" + o.arch + "' gives the shape, not the parameter count: add --params, e.g. --params 7B";
    }
  } else {
    auto params = estimate::parseCount(o.params);
    if (!params) {
      return "--params '" + o.params +
             "' is not a parameter count: write a number from 1 to 1000T with an "
             "optional K, M, B or T suffix, e.g. --params 7B or --params 1.3e9";
    }
    c.parameters = *params;
  }
  auto bytes = estimate::parseBytesPerParameter(o.bytesPerParameter);
  if (!bytes) {
    return "--bytes-per-param '" + o.bytesPerParameter +
           "' is not three numbers W,G,O: bytes per "
           "parameter of weights, gradients and optimizer state, e.g. 2,2,12 (bf16 with fp32 Adam)";
  }
  auto worlds = estimate::parseWorlds(o.worlds);
  if (!worlds) {
    return "--worlds '" + o.worlds +
           "' is not a list of GPU counts: write whole numbers >= 1 "
           "separated by commas, e.g. --worlds 1,8,16";
  }
  const std::string given = files::shownNumber(o.gpuMemoryGB);
  if (!(o.gpuMemoryGB >= 0)) {
    return "--gpu-memory " + given +
           " is negative: give the GPU's memory in GB "
           "(e.g. 80 for an H100), or 0 for no verdict";
  }
  if ((o.fewestGpus || o.largestModel) && !(o.gpuMemoryGB > 0)) {
    return std::string(o.fewestGpus ? "--fewest-gpus" : "--largest-model") + " needs one GPU's memory: --gpu-memory " +
           given + " gives none. Pass e.g. --gpu-memory 80";
  }
  if (!(o.trainedFraction > 0 && o.trainedFraction <= 1)) {
    return "--trained-fraction " + files::shownNumber(o.trainedFraction) +
           " is not a share of the parameters: give a "
           "number above 0 and at most 1 (1: full fine-tuning; LoRA's adapters e.g. 0.01)";
  }
  auto reserve = estimate::parsePercent(o.reserve);
  if (!reserve) {
    return "--reserve '" + o.reserve +
           "' is not a percentage of each GPU's memory: give 0 to 99, e.g. "
           "--reserve 10% to keep a tenth free for activations and buffers";
  }
  c.bytes = *bytes;
  c.worlds = *worlds;
  c.gpuMemoryBytes = o.gpuMemoryGB * 1e9;
  c.trainedFraction = o.trainedFraction;
  c.reserve = *reserve;
  if (auto problem = tensorParallelOf(o, c)) return problem;
  return activationsOf(o, c, arch);
}

int estimateModelStates(const EstimateOptions& o, int shardGroupSize, int microBatches, const Located& located) {
  if (o.gpus != -1) {  // a layout of a given model over a given number of GPUs
    if (o.params.empty() && o.arch.empty()) {
      return badValue(located("--gpus " + std::to_string(o.gpus) +
                              " lays out a model over GPUs: say which with --params (e.g. --params 70B --gpus 64)"));
    }
    if (o.gpus < 1 || o.fewestGpus || o.largestModel) {
      return badValue(
          located("--gpus " + std::to_string(o.gpus) +
                  (o.gpus < 1 ? " is not a number of GPUs: give 1 or more, e.g. --gpus 64"
                              : " lays out a given number of GPUs; drop --fewest-gpus and --largest-model")));
    }
  }
  estimate::ModelStateCase c;
  if (shardGroupSize > 0) c.shardGroupSize = shardGroupSize;
  std::optional<estimate::ArchitecturePreset> arch;
  if (auto problem = modelStateCaseOf(o, c, arch)) return badValue(located(*problem));
  const estimate::ActivationAsked asked{o.arch, arch, o.microBatch, o.recompute, o.activationPrecision};
  if (o.gpus != -1) {
    estimate::printLayouts(stdout, c, o.gpus, microBatches > 0 ? microBatches : 8, o.json);
  } else if (o.fewestGpus) {
    estimate::printFewestGpus(stdout, c, asked, o.json);
  } else if (o.largestModel) {
    estimate::printLargestModel(stdout, c, o.json);
  } else {
    estimate::printModelStateTable(stdout, c, asked, o.json);
  }
  return 0;
}

}  // namespace

void addEstimateOptions(CLI::App& cmd, EstimateOptions& o) {
  cmd.add_option("--params", o.params,
                 "instead of a run: a model of this many parameters (7B, 70B, 1.3e9), shown per GPU for "
                 "each strategy and each of --worlds");
  cmd.add_option("--worlds", o.worlds,
                 "with --params: GPU counts, e.g. 1,8,16 (--world N alone: N GPUs) [default: 1,8,16]");
  cmd.add_option("--bytes-per-param", o.bytesPerParameter,
                 "with --params: bytes per parameter of weights, gradients and optimizer state [default: "
                 "2,2,12, bf16 with fp32 Adam master weights and moments; the seeds' 7B example is 2,2,4, "
                 "their Llama-70B example 2,2,8]");
  cmd.add_option("--trained-fraction", o.trainedFraction,
                 "with --params: the share of the parameters that trains; gradients and optimizer state "
                 "are counted for it only (LoRA's adapters: e.g. 0.01) [default: 1, full fine-tuning]");
  cmd.add_option("--gpu-memory", o.gpuMemoryGB,
                 "with --params: one GPU's memory in GB for a fits / does not fit verdict; 0 for none "
                 "[default: 80, an H100]");
  cmd.add_flag("--fewest-gpus", o.fewestGpus,
               "with --params: the fewest GPUs of --gpu-memory that hold the model states under each strategy");
  cmd.add_flag("--largest-model", o.largestModel,
               "instead of --params: the most parameters whose model states fit each of --worlds GPUs");
  cmd.add_option("--reserve", o.reserve,
                 "with --params or --largest-model: a share of each GPU kept free for what the table leaves "
                 "out (activations, buffers), e.g. 10% [default: 0]");
  cmd.add_option("--arch", o.arch,
                 "with --params or --fewest-gpus: a transformer shape, to add activations per GPU: a preset "
                 "(" +
                     presetNames() + ", which also gives the parameter count) or layers,hidden,heads,sequence");
  cmd.add_option("--micro-batch", o.microBatch, "with --arch: samples per GPU per micro-batch [default: 1]");
  cmd.add_option("--recompute", o.recompute,
                 "with --arch: activation recomputation, none | selective (the attention core) | full (every "
                 "layer from its input) [default: none]");
  cmd.add_option("--activation-precision", o.activationPrecision,
                 "with --arch: the activations' precision, bf16 | fp16 (2 bytes, the paper's table) | fp32 "
                 "(4 bytes; dropout masks stay 1 byte) [default: bf16]");
  cmd.add_option("--gpus", o.gpus,
                 "with --params: every (pp, dp, tp) layout of this many GPUs (tp 1 to 8), with its model "
                 "states per GPU under zero1 and full_shard, its activations (--arch) and its bubble at "
                 "--microbatches M [default M: 8]");
  cmd.add_flag("--json", o.json, "print the prediction as JSON for scripts");
}

bool asksAboutModelStates(const EstimateOptions& options) {
  return !options.params.empty() || options.largestModel || options.fewestGpus || !options.arch.empty() ||
         options.gpus != -1;
}

std::optional<std::string> takeWorldAsWorlds(int world, bool worldsGiven, EstimateOptions& options) {
  const std::string n = std::to_string(world);
  if (options.fewestGpus) {
    return "--fewest-gpus finds the GPU count itself; drop --world " + n +
           " (or drop --fewest-gpus and "
           "give --worlds " +
           n + " to see " + n + " GPUs)";
  }
  if (worldsGiven) {
    return "--world " + n + " and --worlds " + options.worlds +
           " both give GPU counts; this table is per "
           "--worlds, so drop --world (or write --worlds " +
           n + ")";
  }
  options.worlds = n;
  return std::nullopt;
}

int runEstimate(const config::RunConfig& config, const EstimateOptions& given, const Located& located) {
  // --tp and --sequence-parallel are the run's options (config/run_config.cpp): with --params or --arch, GPUs per
  // tensor-parallel group, the model states divided that many ways and the strategies dividing the
  // rest among the N/TP data-parallel ranks; with --arch also the activations it divides and sends.
  EstimateOptions options = given;
  options.tensorParallel = config.tp;
  options.sequenceParallel = config.sequenceParallel;
  if (asksAboutModelStates(options)) {
    return estimateModelStates(options, config.shardGroupSize, config.microbatches, located);
  }
  return estimateRun(config, options.json, located);
}

}  // namespace shardscope::app
