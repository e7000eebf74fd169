#include "app/estimate_command.h"

#include <cstdio>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

#include "estimate/activation_memory.h"
#include "estimate/model_state_table.h"
#include "estimate/parse_quantity.h"
#include "estimate/run_prediction.h"
#include "trace/format.h"
#include "config/model_layout.h"
#include "files/user_json.h"

namespace shardscope::app {

using estimate::When;
using trace::formatBytes;
using trace::formatDecimalGB;

namespace {

const std::vector<StrategyKind> kStrategies = allModes<StrategyKind>();
constexpr trace::MemoryRole kRoles[] = {trace::MemoryRole::ParamShard, trace::MemoryRole::ParamGathered,
                                        trace::MemoryRole::GradFull, trace::MemoryRole::GradShard,
                                        trace::MemoryRole::OptimizerState};
constexpr trace::CollectiveOp kOps[] = {trace::CollectiveOp::AllReduce, trace::CollectiveOp::AllGather,
                                        trace::CollectiveOp::ReduceScatter};

int badValue(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

// A role's row; the host's rows under --offload cpu say "host" in their cells.
std::string rowLabel(const estimate::PredictedMemory& m) {
  return std::string(trace::memoryRoleName(m.role)) + (m.when == When::Peak ? " (peak)" : " (after a step)");
}

// A row per role on the device, and under --offload cpu one more per role the host holds (its
// cells say "host"), each strategy's prediction in its column.
void printMemoryRows(const std::vector<estimate::RunPrediction>& predictions) {
  for (bool host : {false, true}) {
    for (auto role : kRoles) {
      std::string label;
      std::vector<std::string> cells(predictions.size());
      for (size_t i = 0; i < predictions.size(); ++i) {
        const auto* m = predictions[i].find(role, host);
        cells[i] = m ? formatBytes(static_cast<double>(m->bytes)) + (m->host ? " host" : "") : "-";
        if (m) label = rowLabel(*m);
      }
      if (label.empty()) continue;
      std::printf("%-30s", label.c_str());
      for (const auto& cell : cells) std::printf(" %16s", cell.c_str());
      std::printf("\n");
    }
  }
}

// --json: every strategy's prediction, each figure with its formula.
void printPredictionJson(const RunConfig& config, const std::vector<estimate::RunPrediction>& predictions) {
  nlohmann::json out = {{"schema", "shardscope.estimate/1"},
                        {"prediction", true},
                        {"config", config.toJson()},
                        {"parameters", predictions[0].parameters},
                        {"strategies", nlohmann::json::object()}};
  for (size_t i = 0; i < predictions.size(); ++i) {
    nlohmann::json memory = nlohmann::json::object(), wire = nlohmann::json::object();
    nlohmann::json deviceCopies = nlohmann::json::object();  // --offload cpu: a role on both sides
    for (const auto& m : predictions[i].memory) {
      // A role the host holds and the device passes through: the device's figure is its copies.
      const bool passingCopy = !m.host && predictions[i].find(m.role, /*host=*/true);
      auto& into = passingCopy ? deviceCopies : memory;
      into[trace::memoryRoleName(m.role)] = {{"bytes", m.bytes},
                                             {"when", m.when == When::Peak ? "peak" : "after_step"},
                                             {"memory", m.host ? "host" : "device"},
                                             {"formula", m.formula}};
    }
    for (const auto& c : predictions[i].perStep) {
      wire[trace::collectiveOpName(c.op)] = {{"count", c.count},
                                             {"bytes", c.bytes},
                                             {"size_bytes", c.bytes},
                                             {"sent_bytes", c.sentBytes},
                                             {"received_bytes", c.sentBytes},
                                             {"formula", c.formula}};
    }
    out["strategies"][strategyName(kStrategies[i])] = {
        {"padded_parameters", predictions[i].paddedParameters},
        {"memory_per_rank", memory},
        {"offload_device_copies", deviceCopies},
        {"per_step", wire},
        {"sent_bytes_per_step", predictions[i].sentBytesPerStep()},
        {"activation_saved_bytes", predictions[i].activationSavedBytes > 0
                                       ? nlohmann::json(predictions[i].activationSavedBytes)
                                       : nlohmann::json(nullptr)},
        {"model_state_bytes", predictions[i].modelStateBytes()},
        {"host_bytes", predictions[i].hostBytes()}};
  }
  std::printf("%s\n", out.dump(2).c_str());
}

// The memory table: per rank, by role, each strategy a column.
void printMemoryTable(const RunConfig& config, const std::vector<estimate::RunPrediction>& predictions) {
  std::printf("shardscope estimate: a PREDICTION from closed forms (nothing was run or measured)\n");
  std::printf("%s, %d layers, hidden %d%s, world %d, %s, %s; P = %lld parameters (%s)", modeName(config.model),
              config.layers, config.hidden, trainingLabel(config).c_str(), config.world, modeName(config.precision),
              modeName(config.optimizer), static_cast<long long>(predictions[0].parameters),
              trace::formatCount(static_cast<double>(predictions[0].parameters)).c_str());
  if (config.loraRank > 0) {
    std::printf(", T = %lld of them trained (the LoRA adapters)", static_cast<long long>(trainableElements(config)));
  }
  std::printf("\n\n");
  std::printf("%-30s", "per rank");
  for (StrategyKind s : kStrategies) std::printf(" %16s", strategyName(s));
  std::printf("\n");
  printMemoryRows(predictions);
  const bool offloaded = config.offload == Offload::Cpu;
  std::printf("%-30s", offloaded ? "sum of the above on device" : "sum of the above");
  for (const auto& p : predictions) std::printf(" %16s", formatBytes(static_cast<double>(p.modelStateBytes())).c_str());
  if (offloaded) {
    std::printf("\n%-30s", "sum of the above on host");
    for (const auto& p : predictions) std::printf(" %16s", formatBytes(static_cast<double>(p.hostBytes())).c_str());
    std::printf(
        "\n(--offload cpu: the sharded strategies keep their shards and gradient shards in pinned host\n"
        " memory and the optimizer state in host memory, FSDP2's CPUOffloadPolicy; ddp and zero1 have no\n"
        " shards to offload. On the device full_shard and shard_grad_op keep a unit's shard copied in\n"
        " for its all-gather and its gradient shard on the way out; the hybrid strategies' are not\n"
        " predicted, nor any under LoRA)");
  }
  if (predictions[0].activationSavedBytes > 0) {
    std::printf("\n%-30s", "activation (saved for backward)");
    for (const auto& p : predictions)
      std::printf(" %16s", formatBytes(static_cast<double>(p.activationSavedBytes)).c_str());
  }
}

// The collectives per step: each op's size and what a rank sends, and all of it against ddp's.
void printTrafficTable(const std::vector<estimate::RunPrediction>& predictions) {
  std::printf("\n\n%-30s\n", "collectives per step");
  for (auto op : kOps) {
    for (bool sent : {false, true}) {
      const std::string label =
          sent ? std::string("  sent by each rank (ring)") : std::string(trace::collectiveOpName(op)) + " size";
      std::printf("%-30s", label.c_str());
      for (const auto& p : predictions) {
        const auto* c = p.find(op);
        std::string cell = "-";
        if (c && sent) cell = formatBytes(static_cast<double>(c->sentBytes));
        if (c && !sent)
          cell = (c->count >= 0 ? std::to_string(c->count) + " x, " : std::string()) +
                 formatBytes(static_cast<double>(c->bytes));
        std::printf(" %16s", cell.c_str());
      }
      std::printf("\n");
    }
  }
  std::printf("%-30s", "sent by each rank, all");
  for (const auto& p : predictions)
    std::printf(" %16s", formatBytes(static_cast<double>(p.sentBytesPerStep())).c_str());
  std::printf("\n%-30s", "  ratio to ddp");
  for (const auto& p : predictions) {
    const double ddp = static_cast<double>(predictions[0].sentBytesPerStep());
    // At one rank nothing is sent: no ratio, rather than 0.00x for ddp itself.
    char cell[32] = "-";
    if (ddp > 0) std::snprintf(cell, sizeof cell, "%.2fx", p.sentBytesPerStep() / ddp);
    std::printf(" %16s", cell);
  }
}

// The mesh the hybrid strategies assume, how each figure comes about, and what is not predicted.
void printFormulas(const RunConfig& config, const std::vector<estimate::RunPrediction>& predictions) {
  RunConfig hybrid = config;
  hybrid.strategy = StrategyKind::HybridShard;
  const int s = shardGroupSize(hybrid), replicas = replicaCount(hybrid);
  std::printf(
      "\n(size: as nccl-tests counts it; sent: what a rank puts on the wire under the ring schedule,\n"
      " all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size, N the ranks of the\n"
      " collective's group; it receives as much. hybrid_*: a %d x %d mesh (replicate, shard), all-gathers\n"
      " and reduce-scatters among its S = %d, all-reduces among its %d replicas; --shard-group-size sets S)\n",
      replicas, s, s, replicas);
  std::printf(
      "\nHow each figure comes about (P' = P with each FSDP unit padded to a multiple of N = %d, or of S\n"
      "under hybrid_*; P'' = P padded once, zero1's single flat buffer%s):\n",
      config.world,
      config.loraRank > 0 ? ";\nT = the trained LoRA adapters' elements, T' and T'' padded alike, F = P - T frozen"
                          : "");
  for (size_t i = 0; i < predictions.size(); ++i) {
    std::printf("  %s\n", strategyName(kStrategies[i]));
    for (const auto& m : predictions[i].memory) std::printf("    %-31s %s\n", rowLabel(m).c_str(), m.formula.c_str());
    for (const auto& c : predictions[i].perStep)
      std::printf("    %-31s %s\n", trace::collectiveOpName(c.op), c.formula.c_str());
  }
  if (predictions[0].activationSavedBytes > 0) {
    std::printf("  every strategy\n    %-31s %s\n", "activation (saved for backward)",
                predictions[0].activationFormula.c_str());
    std::printf(
        "\nActivations are what forward saves for backward, when backward begins (the summary's\n"
        "activation_saved_bytes); the activation peak adds backward's working memory and is not predicted.\n");
  }
  std::printf(
      "\nNot predicted: %scommunication buffers, allocator overhead%s. To measure them,\n"
      "run the same options with `shardscope compare` (or the app's Estimate tab, which puts the\n"
      "measured figures next to these).\n",
      predictions[0].activationSavedBytes > 0 ? "the activation peak, " : "activations, ",
      config.offload == Offload::Cpu
          ? ",\nunder --offload cpu a unit's shard and gradient shard passing through the device"
          : "");
}

int estimateRun(const RunConfig& config, bool json) {
  // The batch and the output paths a --config file may carry are not its business.
  // Every strategy is predicted: --shard-group-size is checked as the hybrid ones take it.
  RunConfig checked = config;
  if (config.shardGroupSize != 0) checked.strategy = StrategyKind::HybridShard;
  // --offload cpu is the sharded strategies': checked as one of them takes it (ddp and zero1 are
  // predicted without it).
  if (config.offload == Offload::Cpu && !traitsOf(checked.strategy).shardsParameters) {
    checked.strategy = StrategyKind::FullShard;
  }
  if (auto err = estimate::predictionProblem(checked)) return badValue(*err);

  std::vector<estimate::RunPrediction> predictions;
  for (StrategyKind s : kStrategies) {
    RunConfig c = config;
    c.strategy = s;
    if (!traitsOf(s).replicatesShardGroups) c.shardGroupSize = 0;
    predictions.push_back(estimate::predictRun(c));
  }
  if (json) {
    printPredictionJson(config, predictions);
    return 0;
  }
  printMemoryTable(config, predictions);
  printTrafficTable(predictions);
  printFormulas(config, predictions);
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
  c.activationBytes = estimate::transformerActivationBytes(shape, *recompute, *elementBytes);
  if (o.params.empty()) c.parameters = arch->parameters;
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
  return activationsOf(o, c, arch);
}

void printCaseHeader(const char* question, const estimate::ModelStateCase& c, bool withParameters,
                     const EstimateOptions& o, const std::optional<estimate::ArchitecturePreset>& arch) {
  std::printf("shardscope estimate: a PREDICTION of %s (nothing was run or measured)\n", question);
  if (withParameters)
    std::printf("%s parameters x ", trace::formatCount(c.parameters).c_str());
  else
    std::printf("per parameter ");
  std::printf("(%g B weights + %g B gradients + %g B optimizer state)", c.bytes.weights, c.bytes.grads,
              c.bytes.optimizer);
  if (c.trainedFraction < 1) {
    std::printf(", gradients and optimizer state for the %g %% that trains (frozen weights have none)",
                100.0 * c.trainedFraction);
  }
  std::printf("; GB = 10^9 bytes\n");
  if (c.activationBytes > 0) {
    const int e = estimate::parseActivationPrecision(o.activationPrecision).value_or(2);
    const auto recompute = estimate::parseRecompute(o.recompute).value_or(estimate::Recompute::None);
    std::printf(
        "activations per GPU: %s for %s, micro-batch %d, recompute %s, %s activations (Korthikanti\n"
        "et al. 2022, Table 2: dropout and attention scores kept; per layer %s%s).\n"
        "Data parallelism does not divide them: every strategy, any N.\n%s",
        formatDecimalGB(c.activationBytes).c_str(), o.arch.c_str(), o.microBatch, o.recompute.c_str(),
        o.activationPrecision.c_str(), estimate::transformerActivationFormula(recompute, e).c_str(),
        e == 2 ? ", the paper's 16-bit figure" : ": the paper's count with 4-byte values, 1-byte masks",
        arch && !arch->gptLayer ? "For Llama the paper's GPT layer is an APPROXIMATION (its SwiGLU MLP and grouped "
                                  "key/value heads differ).\n"
                                : "");
  }
  if (c.gpuMemoryBytes > 0) {
    std::printf("a GPU of %s", formatDecimalGB(c.gpuMemoryBytes).c_str());
    if (c.reserve > 0) {
      std::printf(", %g %% of it kept free for what is not modelled: %s for the model states", 100.0 * c.reserve,
                  formatDecimalGB(c.budgetBytes()).c_str());
    }
    std::printf("\n");
  }
  std::printf("\n");
}

constexpr const char* kLeftOut =
    "Not included: activations (unless --arch gives the shape), communication buffers, CUDA context,\n"
    "fragmentation (--reserve keeps a share of each GPU for them).\n";

nlohmann::json caseJson(const estimate::ModelStateCase& c) {
  return {{"schema", "shardscope.estimate/1"},
          {"prediction", true},
          {"shard_group_size", c.shardGroupSize},
          {"bytes_per_parameter", {c.bytes.weights, c.bytes.grads, c.bytes.optimizer}},
          {"gpu_memory_bytes", c.gpuMemoryBytes},
          {"reserve", c.reserve},
          {"budget_bytes", c.budgetBytes()},
          {"trained_fraction", c.trainedFraction},
          {"activation_bytes_per_gpu", c.activationBytes}};
}

int printFewestGpus(const estimate::ModelStateCase& c, const EstimateOptions& o,
                    const std::optional<estimate::ArchitecturePreset>& arch) {
  const bool json = o.json;
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    printCaseHeader(c.activationBytes > 0 ? "the fewest GPUs whose memory holds the model states and activations"
                                          : "the fewest GPUs whose memory holds the model states",
                    c, true, o, arch);
    std::printf("%-18s %12s %12s  %s\n", "strategy", "fewest GPUs", "per GPU", "why");
  }
  for (const auto& s : estimate::modelStateStrategies()) {
    const auto n = estimate::fewestGpus(c, s);
    const double perGpu = estimate::modelStateRow(c, s, n.value_or(1)).total();
    if (json) {
      rows.push_back({{"strategy", s.name},
                      {"fewest_gpus", n ? nlohmann::json(*n) : nlohmann::json(nullptr)},
                      {"per_gpu_bytes", n ? nlohmann::json(perGpu) : nlohmann::json(nullptr)}});
      continue;
    }
    std::printf("%-18s %12s %12s  %s\n", s.name, n ? std::to_string(*n).c_str() : "none",
                n ? formatDecimalGB(perGpu).c_str() : "-", s.holds);
  }
  if (json) {
    auto out = caseJson(c);
    out["parameters"] = c.parameters;
    out["fewest_gpus"] = rows;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf(
      "\n\"none\": what the strategy keeps whole on every GPU is more than one GPU holds, so no\n"
      "number of GPUs is enough; for the hybrid ones, its shard group of S = %d GPUs does not hold\n"
      "what it divides, and more replicas do not help (raise --shard-group-size).\n%s",
      c.shardGroupSize, kLeftOut);
  return 0;
}

int printLargestModel(const estimate::ModelStateCase& c, const EstimateOptions& o) {
  const bool json = o.json;
  if (json) {
    auto out = caseJson(c);
    out["largest_model"] = nlohmann::json::array();
    for (const auto& s : estimate::modelStateStrategies()) {
      for (int n : c.worlds) {
        out["largest_model"].push_back(
            {{"strategy", s.name}, {"world", n}, {"parameters", estimate::largestModel(c, s, n)}});
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  printCaseHeader("the largest model whose model states fit so many GPUs", c, false, o, std::nullopt);
  std::printf("%-18s", "strategy");
  for (int n : c.worlds) std::printf(" %10s", (std::to_string(n) + " GPU" + (n == 1 ? "" : "s")).c_str());
  std::printf("  why\n");
  for (const auto& s : estimate::modelStateStrategies()) {
    std::printf("%-18s", s.name);
    for (int n : c.worlds) std::printf(" %10s", trace::formatCount(estimate::largestModel(c, s, n)).c_str());
    std::printf("  %s\n", s.holds);
  }
  std::printf("\n(parameters; K = 10^3, M = 10^6, B = 10^9)\n%s", kLeftOut);
  return 0;
}

int printModelStateTable(const estimate::ModelStateCase& c, const EstimateOptions& o,
                         const std::optional<estimate::ArchitecturePreset>& arch) {
  const bool json = o.json;
  const auto rows = estimate::modelStateTable(c);
  if (json) {
    auto out = caseJson(c);
    out["parameters"] = c.parameters;
    out["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      out["rows"].push_back({{"strategy", r.strategy},
                             {"world", r.world},
                             {"weights", r.weights},
                             {"gathered", r.gathered},
                             {"grads", r.grads},
                             {"optimizer", r.optimizer},
                             {"activations", r.activations},
                             {"total", r.total()},
                             {"fits", r.fits}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  printCaseHeader(c.activationBytes > 0 ? "model-state and activation memory per GPU" : "model-state memory per GPU", c,
                  true, o, arch);
  const bool withActivations = c.activationBytes > 0;
  std::printf("%-18s %5s %12s %12s %12s %12s %12s %12s  %s\n", "strategy", "GPUs", "weights", "gathered", "gradients",
              "optimizer", withActivations ? "activations" : "", "total", c.gpuMemoryBytes > 0 ? "verdict" : "");
  for (const auto& r : rows) {
    std::string verdict;
    if (c.gpuMemoryBytes > 0) {
      verdict = std::string(r.fits ? "fits" : "does NOT fit") + " in " + formatDecimalGB(c.budgetBytes());
    }
    std::printf("%-18s %5d %12s %12s %12s %12s %12s %12s  %s\n", r.strategy.c_str(), r.world,
                formatDecimalGB(r.weights).c_str(), r.gathered > 0 ? formatDecimalGB(r.gathered).c_str() : "-",
                formatDecimalGB(r.grads).c_str(), formatDecimalGB(r.optimizer).c_str(),
                withActivations ? formatDecimalGB(r.activations).c_str() : "", formatDecimalGB(r.total()).c_str(),
                verdict.c_str());
  }
  std::printf("\n");
  for (const auto& s : estimate::modelStateStrategies()) std::printf("%-18s %s\n", s.name, s.holds);
  std::printf(
      "deepspeed_zero2 against shard_grad_op: both divide gradients and optimizer state. DeepSpeed's\n"
      "ZeRO-2 keeps the module's whole low-precision weights (its fp32 master slice is in O);\n"
      "FSDP's SHARD_GRAD_OP keeps only its 1/N weight shard at rest and gathers the whole weights\n"
      "for forward, holding them to backward: W/N more per GPU at the peak. shardscope runs\n"
      "shard_grad_op; deepspeed_zero2 is predicted only.\n");
  std::printf(
      "hybrid_shard (HSDP) divides only among its shard group of S = %d GPUs (--shard-group-size)\n"
      "and replicates across the groups: at N > S it holds what full_shard holds at N = S, in\n"
      "exchange for all-gathers and reduce-scatters that stay inside a group (a node's fast links)\n"
      "and one all-reduce of the gradient shards across them.\n",
      c.shardGroupSize);
  if (c.trainedFraction < 1) {
    std::printf(
        "With few parameters training (LoRA), gradients and optimizer state are small;\n"
        "what decides is whether the frozen weights fit: ddp holds them whole on every GPU.\n");
  }
  std::printf("%s", kLeftOut);
  return 0;
}

int estimateModelStates(const EstimateOptions& o, int shardGroupSize) {
  estimate::ModelStateCase c;
  if (shardGroupSize > 0) c.shardGroupSize = shardGroupSize;
  std::optional<estimate::ArchitecturePreset> arch;
  if (auto problem = modelStateCaseOf(o, c, arch)) return badValue(*problem);
  if (o.fewestGpus) return printFewestGpus(c, o, arch);
  if (o.largestModel) return printLargestModel(c, o);
  return printModelStateTable(c, o, arch);
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
  cmd.add_flag("--json", o.json, "print the prediction as JSON for scripts");
}

bool asksAboutModelStates(const EstimateOptions& options) {
  return !options.params.empty() || options.largestModel || options.fewestGpus || !options.arch.empty();
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

int runEstimate(const RunConfig& config, const EstimateOptions& options) {
  if (asksAboutModelStates(options)) {
    return estimateModelStates(options, config.shardGroupSize);
  }
  return estimateRun(config, options.json);
}

}  // namespace shardscope::app
