#include "estimate/run_prediction_report.h"

#include <nlohmann/json.hpp>

#include "config/model_layout.h"
#include "trace/format.h"

namespace shardscope::estimate {

using trace::formatBytes;

namespace {

// The strategies a prediction covers: all of them, but under --tp the hybrid ones (which a run
// refuses there).
constexpr trace::MemoryRole kRoles[] = {trace::MemoryRole::ParamShard, trace::MemoryRole::ParamGathered,
                                        trace::MemoryRole::GradFull, trace::MemoryRole::GradShard,
                                        trace::MemoryRole::OptimizerState};
constexpr trace::CollectiveOp kOps[] = {trace::CollectiveOp::AllReduce, trace::CollectiveOp::AllGather,
                                        trace::CollectiveOp::ReduceScatter};

// A role's row; the host's rows under --offload cpu say "host" in their cells.
std::string rowLabel(const PredictedMemory& m) {
  return std::string(trace::memoryRoleName(m.role)) + (m.when == When::Peak ? " (peak)" : " (after a step)");
}

// A row per role on the device, and under --offload cpu one more per role the host holds (its
// cells say "host"), each strategy's prediction in its column.
void printMemoryRows(std::FILE* out, const std::vector<RunPrediction>& predictions) {
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
      std::fprintf(out, "%-30s", label.c_str());
      for (const auto& cell : cells) std::fprintf(out, " %16s", cell.c_str());
      std::fprintf(out, "\n");
    }
  }
}

// The memory table: per rank, by role, each strategy a column.
void printMemoryTable(std::FILE* out, const config::RunConfig& config, const std::vector<RunPrediction>& predictions) {
  std::fprintf(out, "shardscope estimate: a PREDICTION from closed forms (nothing was run or measured)\n");
  std::fprintf(out, "%s, %d layers, hidden %d%s, world %d, %s, %s; P = %lld parameters (%s)",
               config::modeName(config.model), config.layers, config.hidden, config::trainingLabel(config).c_str(),
               config.world, config::modeName(config.precision), config::modeName(config.optimizer),
               static_cast<long long>(predictions[0].parameters),
               trace::formatCount(static_cast<double>(predictions[0].parameters)).c_str());
  if (config.loraRank > 0) {
    std::fprintf(out, ", T = %lld of them trained (the LoRA adapters)",
                 static_cast<long long>(config::trainableElements(config)));
  }
  if (config.tp > 1) {
    int64_t whole = 0;
    for (const auto& spec : config::modelLayout(config)) whole += spec.numel();
    std::fprintf(out, " per rank of a tensor group of %d (its slices; the whole model has %lld)", config.tp,
                 static_cast<long long>(whole));
  }
  std::fprintf(out, "\n\n");
  std::fprintf(out, "%-30s", "per rank");
  for (config::StrategyKind s : config::allModes<config::StrategyKind>())
    std::fprintf(out, " %16s", config::strategyName(s));
  std::fprintf(out, "\n");
  printMemoryRows(out, predictions);
  const bool offloaded = config.offload == config::Offload::Cpu;
  std::fprintf(out, "%-30s", offloaded ? "sum of the above on device" : "sum of the above");
  for (const auto& p : predictions)
    std::fprintf(out, " %16s", formatBytes(static_cast<double>(p.modelStateBytes())).c_str());
  if (offloaded) {
    std::fprintf(out, "\n%-30s", "sum of the above on host");
    for (const auto& p : predictions)
      std::fprintf(out, " %16s", formatBytes(static_cast<double>(p.hostBytes())).c_str());
    std::fprintf(out,
                 "\n(--offload cpu: the sharded strategies keep their shards and gradient shards in pinned host\n"
                 " memory and the optimizer state in host memory, FSDP2's CPUOffloadPolicy; ddp and zero1 have no\n"
                 " shards to offload. On the device full_shard and shard_grad_op keep a unit's shard copied in\n"
                 " for its all-gather and its gradient shard on the way out; the hybrid strategies' are not\n"
                 " predicted, nor any under LoRA)");
  }
  if (predictions[0].activationSavedBytes > 0) {
    std::fprintf(out, "\n%-30s", "activation (saved for backward)");
    for (const auto& p : predictions)
      std::fprintf(out, " %16s", formatBytes(static_cast<double>(p.activationSavedBytes)).c_str());
  }
}

// Under --tp: the tensor group's collectives (all-reduces; under --sequence-parallel all-gathers
// and reduce-scatters too), rows of their own under the strategy's.
void printTensorGroupRows(std::FILE* out, const std::vector<RunPrediction>& predictions) {
  for (auto op : kOps) {
    if (!predictions.front().tensorGroup(op)) continue;
    for (bool sent : {false, true}) {
      const std::string label = sent ? std::string("  sent by each rank (ring)")
                                     : std::string(trace::collectiveOpName(op)) + " size, tensor group";
      std::fprintf(out, "%-30s", label.c_str());
      for (const auto& p : predictions) {
        const auto* t = p.tensorGroup(op);
        const std::string cell = sent ? formatBytes(static_cast<double>(t->sentBytes))
                                      : std::to_string(t->count) + " x, " + formatBytes(static_cast<double>(t->bytes));
        std::fprintf(out, " %16s", cell.c_str());
      }
      std::fprintf(out, "\n");
    }
  }
}

// The collectives per step: each op's size and what a rank sends, and all of it against ddp's.
void printTrafficTable(std::FILE* out, const std::vector<RunPrediction>& predictions) {
  std::fprintf(out, "\n\n%-30s\n", "collectives per step");
  for (auto op : kOps) {
    for (bool sent : {false, true}) {
      const std::string label =
          sent ? std::string("  sent by each rank (ring)") : std::string(trace::collectiveOpName(op)) + " size";
      std::fprintf(out, "%-30s", label.c_str());
      for (const auto& p : predictions) {
        const auto* c = p.find(op);
        std::string cell = "-";
        if (c && sent) cell = formatBytes(static_cast<double>(c->sentBytes));
        if (c && !sent)
          cell = (c->count >= 0 ? std::to_string(c->count) + " x, " : std::string()) +
                 formatBytes(static_cast<double>(c->bytes));
        std::fprintf(out, " %16s", cell.c_str());
      }
      std::fprintf(out, "\n");
    }
  }
  printTensorGroupRows(out, predictions);
  std::fprintf(out, "%-30s", "sent by each rank, all");
  for (const auto& p : predictions)
    std::fprintf(out, " %16s", formatBytes(static_cast<double>(p.sentBytesPerStep())).c_str());
  std::fprintf(out, "\n%-30s", "  ratio to ddp");
  for (const auto& p : predictions) {
    const double ddp = static_cast<double>(predictions[0].sentBytesPerStep());
    // At one rank nothing is sent: no ratio, rather than 0.00x for ddp itself.
    char cell[32] = "-";
    if (ddp > 0) std::snprintf(cell, sizeof cell, "%.2fx", p.sentBytesPerStep() / ddp);
    std::fprintf(out, " %16s", cell);
  }
}

// The mesh the hybrid strategies assume, how each figure comes about, and what is not predicted.
void printFormulas(std::FILE* out, const config::RunConfig& config, const std::vector<RunPrediction>& predictions) {
  config::RunConfig hybrid = config;
  hybrid.strategy = config::StrategyKind::HybridShard;
  const int s = shardGroupSize(hybrid), replicas = config::replicaCount(hybrid);
  std::fprintf(out,
               "\n(size: as nccl-tests counts it; sent: what a rank puts on the wire under the ring schedule,\n"
               " all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size, N the ranks of the\n"
               " collective's group; it receives as much.");
  std::fprintf(out,
               " hybrid_*: a %d x %d mesh (replicate, shard)%s, all-gathers\n"
               " and reduce-scatters among its S = %d, all-reduces among its %d replicas; --shard-group-size sets S",
               replicas, s, config.tp > 1 ? " over the data ranks" : "", s, replicas);
  std::fprintf(out, ")\n");
  if (config.tp > 1) {
    std::fprintf(
        out,
        "(--tp %d: the strategies work over the %d data ranks, N below; each tensor group %s among its "
        "%d)\n",
        config.tp, config.world / config.tp,
        config.sequenceParallel ? "all-gathers, reduce-scatters and all-reduces (--sequence-parallel)" : "all-reduces",
        config.tp);
  }
  std::fprintf(out,
               "\nHow each figure comes about (P' = P with each FSDP unit padded to a multiple of N = %d, or of S\n"
               "under hybrid_*; P'' = P padded once, zero1's single flat buffer%s):\n",
               config.world / std::max(1, config.tp),
               config.loraRank > 0
                   ? ";\nT = the trained LoRA adapters' elements, T' and T'' padded alike, F = P - T frozen"
                   : "");
  for (size_t i = 0; i < predictions.size(); ++i) {
    std::fprintf(out, "  %s\n", config::strategyName(config::allModes<config::StrategyKind>()[i]));
    for (const auto& m : predictions[i].memory)
      std::fprintf(out, "    %-31s %s\n", rowLabel(m).c_str(), m.formula.c_str());
    for (const auto& c : predictions[i].perStep) {
      const std::string name =
          std::string(trace::collectiveOpName(c.op)) + (c.group == trace::ProcessGroup::Tensor ? ", tensor group" : "");
      std::fprintf(out, "    %-31s %s\n", name.c_str(), c.formula.c_str());
    }
  }
  if (predictions[0].activationSavedBytes > 0) {
    std::fprintf(out, "  every strategy\n    %-31s %s\n", "activation (saved for backward)",
                 predictions[0].activationFormula.c_str());
    std::fprintf(out,
                 "\nActivations are what forward saves for backward, when backward begins (the summary's\n"
                 "activation_saved_bytes); the activation peak adds backward's working memory and is not predicted.\n");
  }
  std::fprintf(out,
               "\nNot predicted: %scommunication buffers, allocator overhead%s. To measure them,\n"
               "run the same options with `shardscope compare` (or the app's Estimate tab, which puts the\n"
               "measured figures next to these).\n",
               predictions[0].activationSavedBytes > 0 ? "the activation peak, " : "activations, ",
               config.offload == config::Offload::Cpu
                   ? ",\nunder --offload cpu a unit's shard and gradient shard passing through the device"
                   : "");
}

}  // namespace

std::vector<RunPrediction> predictEveryStrategy(const config::RunConfig& config) {
  std::vector<RunPrediction> predictions;
  for (config::StrategyKind s : config::allModes<config::StrategyKind>()) {
    config::RunConfig c = config;
    c.strategy = s;
    if (!config::traitsOf(s).replicatesShardGroups) c.shardGroupSize = 0;
    predictions.push_back(predictRun(c));
  }
  return predictions;
}

void printRunPredictions(std::FILE* out, const config::RunConfig& config,
                         const std::vector<RunPrediction>& predictions) {
  printMemoryTable(out, config, predictions);
  printTrafficTable(out, predictions);
  printFormulas(out, config, predictions);
}

// --json: every strategy's prediction, each figure with its formula.
void printRunPredictionsJson(std::FILE* out, const config::RunConfig& config,
                             const std::vector<RunPrediction>& predictions) {
  nlohmann::json doc = {{"schema", "shardscope.estimate/1"},
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
      if (c.group == trace::ProcessGroup::Tensor) continue;  // below, apart
      wire[trace::collectiveOpName(c.op)] = {{"count", c.count},
                                             {"bytes", c.bytes},
                                             {"size_bytes", c.bytes},
                                             {"sent_bytes", c.sentBytes},
                                             {"received_bytes", c.sentBytes},
                                             {"formula", c.formula}};
    }
    for (auto op : kOps) {
      const auto* t = predictions[i].tensorGroup(op);
      if (!t) continue;
      wire["tensor_group_" + std::string(trace::collectiveOpName(op))] = {
          {"count", t->count},          {"bytes", t->bytes},
          {"sent_bytes", t->sentBytes}, {"received_bytes", t->sentBytes},
          {"group_size", t->groupSize}, {"formula", t->formula}};
    }
    doc["strategies"][config::strategyName(config::allModes<config::StrategyKind>()[i])] = {
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
  std::fprintf(out, "%s\n", doc.dump(2).c_str());
}

}  // namespace shardscope::estimate
