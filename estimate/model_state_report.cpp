#include "estimate/model_state_report.h"

#include <nlohmann/json.hpp>

#include "trace/format.h"

namespace shardscope::estimate {

using trace::formatDecimalGB;

namespace {

// Under --tp: what tensor parallelism divides, and, given a shape, what it sends.
void printTensorParallel(std::FILE* out, const ModelStateCase& c, const ActivationAsked& o) {
  const TensorParallel& tp = c.tensorParallel;
  if (tp.degree <= 1) return;
  std::fprintf(out,
               "tensor parallel: in each group of t = %d GPUs every weight, its gradient and its optimizer state\n"
               "divided t ways (Megatron's column-, row- and vocabulary-parallel layers; the norms' few parameters,\n"
               "replicated, left out); the strategies divide the rest among the N/%d data-parallel ranks%s\n",
               tp.degree, tp.degree, tp.sequence ? "; sequence parallel" : "");
  if (!o.preset) return;
  TransformerShape shape = o.preset->shape;
  shape.microBatch = o.microBatch;
  const int e = parseActivationPrecision(o.precision).value_or(2);
  const auto traffic =
      tensorParallelTraffic(shape, parseRecompute(o.recompute).value_or(Recompute::None), e, c.tensorParallel);
  std::fprintf(out, "tensor parallel sends, per micro-batch: %lld x %s, %s from each GPU (%s)\n",
               static_cast<long long>(traffic.allReduces), formatDecimalGB(traffic.sizeBytes).c_str(),
               formatDecimalGB(traffic.sentBytes).c_str(), traffic.formula.c_str());
}

void printCaseHeader(std::FILE* out, const char* question, const ModelStateCase& c, bool withParameters,
                     const ActivationAsked& o) {
  std::fprintf(out, "shardscope estimate: a PREDICTION of %s (nothing was run or measured)\n", question);
  if (withParameters)
    std::fprintf(out, "%s parameters x ", trace::formatCount(c.parameters).c_str());
  else
    std::fprintf(out, "per parameter ");
  std::fprintf(out, "(%g B weights + %g B gradients + %g B optimizer state)", c.bytes.weights, c.bytes.grads,
               c.bytes.optimizer);
  if (c.trainedFraction < 1) {
    std::fprintf(out, ", gradients and optimizer state for the %g %% that trains (frozen weights have none)",
                 100.0 * c.trainedFraction);
  }
  std::fprintf(out, "; GB = 10^9 bytes\n");
  printTensorParallel(out, c, o);
  if (c.activationBytes > 0) {
    const int e = parseActivationPrecision(o.precision).value_or(2);
    const auto recompute = parseRecompute(o.recompute).value_or(Recompute::None);
    std::fprintf(out,
                 "activations per GPU: %s for %s, micro-batch %d, recompute %s, %s activations (Korthikanti\n"
                 "et al. 2022, Table 2: dropout and attention scores kept; per layer %s%s).\n"
                 "%s\n%s",
                 formatDecimalGB(c.activationBytes).c_str(), o.arch.c_str(), o.microBatch, o.recompute.c_str(),
                 o.precision.c_str(), transformerActivationFormula(recompute, e, c.tensorParallel).c_str(),
                 e == 2 ? ", the paper's 16-bit figure" : ": the paper's count with 4-byte values, 1-byte masks",
                 c.tensorParallel.degree > 1
                     ? "Tensor parallelism divides them so; data parallelism does not: every strategy, any N."
                     : "Data parallelism does not divide them: every strategy, any N.",
                 o.preset && !o.preset->gptLayer
                     ? "For Llama the paper's GPT layer is an APPROXIMATION (its SwiGLU MLP and grouped "
                       "key/value heads differ).\n"
                     : "");
  }
  if (c.gpuMemoryBytes > 0) {
    std::fprintf(out, "a GPU of %s", formatDecimalGB(c.gpuMemoryBytes).c_str());
    if (c.reserve > 0) {
      std::fprintf(out, ", %g %% of it kept free for what is not modelled: %s for the model states", 100.0 * c.reserve,
                   formatDecimalGB(c.budgetBytes()).c_str());
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "\n");
}

constexpr const char* kLeftOut =
    "Not included: activations (unless --arch gives the shape), communication buffers, CUDA context,\n"
    "fragmentation (--reserve keeps a share of each GPU for them).\n";

nlohmann::json caseJson(const ModelStateCase& c) {
  return {{"schema", "shardscope.estimate/1"},
          {"prediction", true},
          {"shard_group_size", c.shardGroupSize},
          {"tensor_parallel", c.tensorParallel.degree},
          {"sequence_parallel", c.tensorParallel.sequence},
          {"bytes_per_parameter", {c.bytes.weights, c.bytes.grads, c.bytes.optimizer}},
          {"gpu_memory_bytes", c.gpuMemoryBytes},
          {"reserve", c.reserve},
          {"budget_bytes", c.budgetBytes()},
          {"trained_fraction", c.trainedFraction},
          {"activation_bytes_per_gpu", c.activationBytes}};
}

}  // namespace

void printFewestGpus(std::FILE* out, const ModelStateCase& c, const ActivationAsked& o, bool json) {
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    printCaseHeader(out,
                    c.activationBytes > 0 ? "the fewest GPUs whose memory holds the model states and activations"
                                          : "the fewest GPUs whose memory holds the model states",
                    c, true, o);
    std::fprintf(out, "%-18s %12s %12s  %s\n", "strategy", "fewest GPUs", "per GPU", "why");
  }
  for (const auto& s : modelStateStrategies()) {
    const auto n = fewestGpus(c, s);
    const double perGpu = modelStateRow(c, s, n.value_or(1)).total();
    if (json) {
      rows.push_back({{"strategy", s.name},
                      {"fewest_gpus", n ? nlohmann::json(*n) : nlohmann::json(nullptr)},
                      {"per_gpu_bytes", n ? nlohmann::json(perGpu) : nlohmann::json(nullptr)}});
      continue;
    }
    std::fprintf(out, "%-18s %12s %12s  %s\n", s.name, n ? std::to_string(*n).c_str() : "none",
                 n ? formatDecimalGB(perGpu).c_str() : "-", s.holds);
  }
  if (json) {
    auto doc = caseJson(c);
    doc["parameters"] = c.parameters;
    doc["fewest_gpus"] = rows;
    std::fprintf(out, "%s\n", doc.dump(2).c_str());
    return;
  }
  std::fprintf(out,
               "\n\"none\": what the strategy keeps whole on every GPU is more than one GPU holds, so no\n"
               "number of GPUs is enough; for the hybrid ones, its shard group of S = %d GPUs does not hold\n"
               "what it divides, and more replicas do not help (raise --shard-group-size).\n%s",
               c.shardGroupSize, kLeftOut);
}

void printLargestModel(std::FILE* out, const ModelStateCase& c, bool json) {
  if (json) {
    auto doc = caseJson(c);
    doc["largest_model"] = nlohmann::json::array();
    for (const auto& s : modelStateStrategies()) {
      for (int n : c.worlds) {
        doc["largest_model"].push_back({{"strategy", s.name}, {"world", n}, {"parameters", largestModel(c, s, n)}});
      }
    }
    std::fprintf(out, "%s\n", doc.dump(2).c_str());
    return;
  }
  printCaseHeader(out, "the largest model whose model states fit so many GPUs", c, false, ActivationAsked{});
  std::fprintf(out, "%-18s", "strategy");
  for (int n : c.worlds) std::fprintf(out, " %10s", (std::to_string(n) + " GPU" + (n == 1 ? "" : "s")).c_str());
  std::fprintf(out, "  why\n");
  for (const auto& s : modelStateStrategies()) {
    std::fprintf(out, "%-18s", s.name);
    for (int n : c.worlds) std::fprintf(out, " %10s", trace::formatCount(largestModel(c, s, n)).c_str());
    std::fprintf(out, "  %s\n", s.holds);
  }
  std::fprintf(out, "\n(parameters; K = 10^3, M = 10^6, B = 10^9)\n%s", kLeftOut);
}

void printModelStateTable(std::FILE* out, const ModelStateCase& c, const ActivationAsked& o, bool json) {
  const auto rows = modelStateTable(c);
  if (json) {
    auto doc = caseJson(c);
    doc["parameters"] = c.parameters;
    doc["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
      doc["rows"].push_back({{"strategy", r.strategy},
                             {"world", r.world},
                             {"weights", r.weights},
                             {"gathered", r.gathered},
                             {"grads", r.grads},
                             {"optimizer", r.optimizer},
                             {"activations", r.activations},
                             {"total", r.total()},
                             {"fits", r.fits}});
    }
    std::fprintf(out, "%s\n", doc.dump(2).c_str());
    return;
  }
  printCaseHeader(out,
                  c.activationBytes > 0 ? "model-state and activation memory per GPU" : "model-state memory per GPU", c,
                  true, o);
  const bool withActivations = c.activationBytes > 0;
  std::fprintf(out, "%-18s %5s %12s %12s %12s %12s %12s %12s  %s\n", "strategy", "GPUs", "weights", "gathered",
               "gradients", "optimizer", withActivations ? "activations" : "", "total",
               c.gpuMemoryBytes > 0 ? "verdict" : "");
  for (const auto& r : rows) {
    std::string verdict;
    if (c.gpuMemoryBytes > 0) {
      verdict = std::string(r.fits ? "fits" : "does NOT fit") + " in " + formatDecimalGB(c.budgetBytes());
    }
    std::fprintf(out, "%-18s %5d %12s %12s %12s %12s %12s %12s  %s\n", r.strategy.c_str(), r.world,
                 formatDecimalGB(r.weights).c_str(), r.gathered > 0 ? formatDecimalGB(r.gathered).c_str() : "-",
                 formatDecimalGB(r.grads).c_str(), formatDecimalGB(r.optimizer).c_str(),
                 withActivations ? formatDecimalGB(r.activations).c_str() : "", formatDecimalGB(r.total()).c_str(),
                 verdict.c_str());
  }
  std::fprintf(out, "\n");
  for (const auto& s : modelStateStrategies()) std::fprintf(out, "%-18s %s\n", s.name, s.holds);
  std::fprintf(out,
               "deepspeed_zero2 against shard_grad_op: both divide gradients and optimizer state. DeepSpeed's\n"
               "ZeRO-2 keeps the module's whole low-precision weights (its fp32 master slice is in O);\n"
               "FSDP's SHARD_GRAD_OP keeps only its 1/N weight shard at rest and gathers the whole weights\n"
               "for forward, holding them to backward: W/N more per GPU at the peak. shardscope runs\n"
               "shard_grad_op; deepspeed_zero2 is predicted only.\n");
  std::fprintf(out,
               "hybrid_shard (HSDP) divides only among its shard group of S = %d GPUs (--shard-group-size)\n"
               "and replicates across the groups: at N > S it holds what full_shard holds at N = S, in\n"
               "exchange for all-gathers and reduce-scatters that stay inside a group (a node's fast links)\n"
               "and one all-reduce of the gradient shards across them.\n",
               c.shardGroupSize);
  if (c.trainedFraction < 1) {
    std::fprintf(out,
                 "With few parameters training (LoRA), gradients and optimizer state are small;\n"
                 "what decides is whether the frozen weights fit: ddp holds them whole on every GPU.\n");
  }
  std::fprintf(out, "%s", kLeftOut);
}

}  // namespace shardscope::estimate
