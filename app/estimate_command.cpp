#include "app/estimate_command.h"

#include <cstdio>
#include <iterator>

#include <nlohmann/json.hpp>

#include "estimate/model_state_table.h"
#include "estimate/parse_quantity.h"
#include "estimate/run_prediction.h"
#include "trace/format.h"
#include "trace/model_layout.h"

namespace shardscope::app {

using estimate::When;
using trace::formatBytes;
using trace::formatDecimalGB;

namespace {

constexpr const char* kStrategies[] = {"ddp", "zero1", "full_shard", "shard_grad_op"};
constexpr trace::MemoryRole kRoles[] = {trace::MemoryRole::ParamShard, trace::MemoryRole::ParamGathered,
                                        trace::MemoryRole::GradFull, trace::MemoryRole::GradShard,
                                        trace::MemoryRole::OptimizerState};
constexpr trace::CollectiveOp kOps[] = {trace::CollectiveOp::AllReduce, trace::CollectiveOp::AllGather,
                                        trace::CollectiveOp::ReduceScatter};

int badValue(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

std::string rowLabel(const estimate::PredictedMemory& m) {
  return std::string(trace::memoryRoleName(m.role)) + (m.when == When::Peak ? " (peak)" : " (after a step)");
}

int estimateRun(const RunConfig& config, bool json) {
  // The batch and the output paths a --config file may carry are not its business.
  if (auto err = estimate::predictionProblem(config)) return badValue(*err);

  std::vector<estimate::RunPrediction> predictions;
  for (const char* s : kStrategies) {
    RunConfig c = config;
    c.strategy = s;
    predictions.push_back(estimate::predictRun(c));
  }
  if (json) {
    nlohmann::json out = {{"schema", "shardscope.estimate/1"},
                          {"prediction", true},
                          {"config", config.toJson()},
                          {"parameters", predictions[0].parameters},
                          {"strategies", nlohmann::json::object()}};
    for (size_t i = 0; i < predictions.size(); ++i) {
      nlohmann::json memory = nlohmann::json::object(), wire = nlohmann::json::object();
      for (const auto& m : predictions[i].memory) {
        memory[trace::memoryRoleName(m.role)] = {{"bytes", m.bytes},
                                                 {"when", m.when == When::Peak ? "peak" : "after_step"},
                                                 {"formula", m.formula}};
      }
      for (const auto& c : predictions[i].perStep) {
        wire[trace::collectiveOpName(c.op)] = {{"count", c.count}, {"bytes", c.bytes}, {"formula", c.formula}};
      }
      out["strategies"][kStrategies[i]] = {{"padded_parameters", predictions[i].paddedParameters},
                                           {"memory_per_rank", memory},
                                           {"per_step", wire},
                                           {"model_state_bytes", predictions[i].modelStateBytes()}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  std::printf("shardscope estimate: a PREDICTION from closed forms (nothing was run or measured)\n");
  std::printf("%s, %d layers, hidden %d%s, world %d, %s, %s; P = %lld parameters (%s)", config.model.c_str(),
              config.layers, config.hidden, trainingLabel(config).c_str(), config.world, config.precision.c_str(),
              config.optimizer.c_str(), static_cast<long long>(predictions[0].parameters),
              trace::formatCount(static_cast<double>(predictions[0].parameters)).c_str());
  if (config.loraRank > 0) {
    std::printf(", T = %lld of them trained (the LoRA adapters)", static_cast<long long>(trainableElements(config)));
  }
  std::printf("\n\n");
  std::printf("%-30s", "per rank");
  for (const char* s : kStrategies) std::printf(" %16s", s);
  std::printf("\n");
  for (auto role : kRoles) {
    std::string label;
    std::string cells[std::size(kStrategies)];
    bool any = false;
    for (size_t i = 0; i < predictions.size(); ++i) {
      const auto* m = predictions[i].find(role);
      cells[i] = m ? formatBytes(static_cast<double>(m->bytes)) : "-";
      if (m) {
        label = rowLabel(*m);
        any = true;
      }
    }
    if (!any) continue;
    std::printf("%-30s", label.c_str());
    for (const auto& cell : cells) std::printf(" %16s", cell.c_str());
    std::printf("\n");
  }
  std::printf("%-30s", "sum of the above");
  for (const auto& p : predictions) std::printf(" %16s", formatBytes(static_cast<double>(p.modelStateBytes())).c_str());
  std::printf("\n\n%-30s\n", "on the wire per step");
  for (auto op : kOps) {
    std::printf("%-30s", trace::collectiveOpName(op));
    for (const auto& p : predictions) {
      const auto* c = p.find(op);
      std::string cell = "-";
      if (c) cell = (c->count >= 0 ? std::to_string(c->count) + " x, " : std::string()) + formatBytes(static_cast<double>(c->bytes));
      std::printf(" %16s", cell.c_str());
    }
    std::printf("\n");
  }
  std::printf("\nHow each figure comes about (P' = P with each FSDP unit padded to a multiple of N = %d;\n"
              "P'' = P padded once, zero1's single flat buffer%s):\n", config.world,
              config.loraRank > 0 ? ";\nT = the trained LoRA adapters' elements, T' and T'' padded alike, F = P - T frozen" : "");
  for (size_t i = 0; i < predictions.size(); ++i) {
    std::printf("  %s\n", kStrategies[i]);
    for (const auto& m : predictions[i].memory) std::printf("    %-31s %s\n", rowLabel(m).c_str(), m.formula.c_str());
    for (const auto& c : predictions[i].perStep) std::printf("    %-31s %s\n", trace::collectiveOpName(c.op), c.formula.c_str());
  }
  std::printf("\nNot predicted: activations, communication buffers, allocator overhead. To measure them,\n"
              "run the same options with `shardscope compare` (or the app's Estimate tab, which puts the\n"
              "measured figures next to these).\n");
  return 0;
}

int estimateModelStates(const EstimateOptions& o) {
  auto params = estimate::parseCount(o.params);
  if (!params) {
    return badValue("--params '" + o.params + "' is not a parameter count: write a positive number with an "
                    "optional K, M, B or T suffix, e.g. --params 7B or --params 1.3e9");
  }
  auto bytes = estimate::parseBytesPerParameter(o.bytesPerParameter);
  if (!bytes) {
    return badValue("--bytes-per-param '" + o.bytesPerParameter + "' is not three numbers W,G,O: bytes per "
                    "parameter of weights, gradients and optimizer state, e.g. 2,2,12 (bf16 with fp32 Adam)");
  }
  auto worlds = estimate::parseWorlds(o.worlds);
  if (!worlds) {
    return badValue("--worlds '" + o.worlds + "' is not a list of GPU counts: write whole numbers >= 1 "
                    "separated by commas, e.g. --worlds 1,8,16");
  }
  if (!(o.gpuMemoryGB >= 0)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", o.gpuMemoryGB);
    return badValue("--gpu-memory " + std::string(given) + " is negative: give the GPU's memory in GB "
                    "(e.g. 80 for an H100), or 0 for no verdict");
  }
  if (!(o.trainedFraction > 0 && o.trainedFraction <= 1)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", o.trainedFraction);
    return badValue("--trained-fraction " + std::string(given) + " is not a share of the parameters: give a "
                    "number above 0 and at most 1 (1: full fine-tuning; LoRA's adapters e.g. 0.01)");
  }
  estimate::ModelStateCase c;
  c.trainedFraction = o.trainedFraction;
  c.parameters = *params;
  c.bytes = *bytes;
  c.worlds = *worlds;
  c.gpuMemoryBytes = o.gpuMemoryGB * 1e9;
  const auto rows = estimate::modelStateTable(c);
  if (o.json) {
    nlohmann::json out = {{"schema", "shardscope.estimate/1"},
                          {"prediction", true},
                          {"parameters", c.parameters},
                          {"bytes_per_parameter", {c.bytes.weights, c.bytes.grads, c.bytes.optimizer}},
                          {"gpu_memory_bytes", c.gpuMemoryBytes},
                          {"trained_fraction", c.trainedFraction},
                          {"rows", nlohmann::json::array()}};
    for (const auto& r : rows) {
      out["rows"].push_back({{"strategy", r.strategy}, {"world", r.world}, {"weights", r.weights},
                             {"gathered", r.gathered}, {"grads", r.grads}, {"optimizer", r.optimizer},
                             {"total", r.total()}, {"fits", r.fits}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("shardscope estimate: a PREDICTION of model-state memory per GPU (nothing was run or measured)\n");
  std::printf("%s parameters x (%g B weights + %g B gradients + %g B optimizer state)", trace::formatCount(c.parameters).c_str(),
              c.bytes.weights, c.bytes.grads, c.bytes.optimizer);
  if (c.trainedFraction < 1) {
    std::printf(", gradients and optimizer state for the %g %% that trains (frozen weights have none)",
                100.0 * c.trainedFraction);
  }
  std::printf("; GB = 10^9 bytes\n\n");
  std::printf("%-14s %5s %12s %12s %12s %12s %12s  %s\n", "strategy", "GPUs", "weights", "gathered",
              "gradients", "optimizer", "total", o.gpuMemoryGB > 0 ? "verdict" : "");
  for (const auto& r : rows) {
    std::string verdict;
    if (o.gpuMemoryGB > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s in %g GB", r.fits ? "fits" : "does NOT fit", o.gpuMemoryGB);
      verdict = buf;
    }
    std::printf("%-14s %5d %12s %12s %12s %12s %12s  %s\n", r.strategy.c_str(), r.world,
                formatDecimalGB(r.weights).c_str(), r.gathered > 0 ? formatDecimalGB(r.gathered).c_str() : "-",
                formatDecimalGB(r.grads).c_str(), formatDecimalGB(r.optimizer).c_str(),
                formatDecimalGB(r.total()).c_str(), verdict.c_str());
  }
  std::printf("\nddp keeps everything on every GPU; zero1 divides the optimizer state by N; full_shard\n"
              "divides all three (plus the one or two units being gathered at a time, left out as the\n"
              "seed documents do); shard_grad_op divides them too but holds every unit's weights\n"
              "gathered from forward to backward.%s\n"
              "Not included: activations, communication buffers, CUDA context, fragmentation.\n",
              c.trainedFraction < 1 ? "\nWith few parameters training (LoRA), gradients and optimizer state are small;\n"
                                      "what decides is whether the frozen weights fit: ddp holds them whole on every GPU."
                                    : "");
  return 0;
}

}  // namespace

void addEstimateOptions(CLI::App& cmd, EstimateOptions& o) {
  cmd.add_option("--params", o.params,
                 "instead of a run: a model of this many parameters (7B, 70B, 1.3e9), shown per GPU for "
                 "each strategy and each of --worlds");
  cmd.add_option("--worlds", o.worlds, "with --params: GPU counts, e.g. 1,8,16 [default: 1,8,16]");
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
  cmd.add_flag("--json", o.json, "print the prediction as JSON for scripts");
}

int runEstimate(const RunConfig& config, const EstimateOptions& options) {
  if (!options.params.empty()) return estimateModelStates(options);
  return estimateRun(config, options.json);
}

}  // namespace shardscope::app
