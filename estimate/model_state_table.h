// The seed documents' memory tables, live: model-state bytes per GPU for a model of any size under
// each strategy, from bytes per parameter for weights, gradients and optimizer state. Like those
// tables it leaves out activations, communication buffers and allocator overhead, and it is a
// prediction: nothing here was measured. It also answers the inverse questions: the fewest GPUs a
// model needs under each strategy, and the largest model that fits so many GPUs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "estimate/activation_memory.h"

namespace shardscope::estimate {

// Bytes per parameter. The default is the ZeRO paper's mixed-precision Adam: bf16 weights and
// gradients (2 + 2) and fp32 master weights and two moments (12, the paper's K). The seeds' 7B
// example uses 2, 2, 4 (56 GB on one GPU); their Llama-70B example uses 2, 2, 8 (840 GB).
struct BytesPerParameter {
  double weights = 2, grads = 2, optimizer = 12;
};

// How a strategy holds each model state: whole on every GPU, or divided by N.
struct ModelStateStrategy {
  const char* name;
  const char* holds;  // one line for the output: what each GPU keeps
  bool weightsDivided, keepsGatheredWeights, gradsDivided, optimizerDivided;
  bool withinShardGroup = false;  // HSDP: divided by the shard group's S, not by N
};

// ddp, zero1, deepspeed_zero2, shard_grad_op, full_shard. deepspeed_zero2 is the ZeRO paper's
// P_os+g (DeepSpeed stage 2: every GPU keeps the whole low-precision weights; gradients and
// optimizer state are partitioned). FSDP's SHARD_GRAD_OP differs from it by the weight shard it
// keeps beside the gathered copy. Only the table's estimator knows deepspeed_zero2: shardscope runs
// the other four.
const std::vector<ModelStateStrategy>& modelStateStrategies();

struct ModelStateCase {
  double parameters = 70e9;
  BytesPerParameter bytes;
  std::vector<int> worlds = {1, 8, 16};
  double gpuMemoryBytes = 80e9;  // 0: no verdict
  // The share of the parameters that train: 1 for full fine-tuning; LoRA's adapters are well under
  // 1 %. Frozen weights have no gradients and no optimizer state, but every strategy still holds
  // them (ddp whole, the sharded strategies 1/N, gathered for compute).
  double trainedFraction = 1.0;
  // The share of each GPU's memory kept free for what the table leaves out (activations, buffers,
  // the CUDA context): the verdicts and inverse answers use gpuMemoryBytes x (1 - reserve).
  double reserve = 0.0;
  double budgetBytes() const { return gpuMemoryBytes * (1.0 - reserve); }
  // Activations per GPU (its micro-batch's, the same under every strategy and N); 0: left out.
  double activationBytes = 0;
  // HSDP's shard group: the GPUs that divide the model states among them (8: one node of 8 GPUs,
  // the usual layout). Fewer GPUs than that are one group of them all.
  int shardGroupSize = 8;
  // Tensor parallelism inside each group of `degree` GPUs: every weight (Megatron's column-, row-
  // and vocabulary-parallel layers) and its gradient and optimizer state divided that many ways;
  // the strategies then divide what is left among the N / degree data-parallel ranks. The norms'
  // few parameters, replicated, are left out. GPU counts are multiples of the degree.
  TensorParallel tensorParallel;
};

struct ModelStateRow {
  std::string strategy;  // a name from modelStateStrategies()
  int world = 1;
  // Per GPU, bytes. Sharded strategies hold 1/N of the weights at rest; `gathered` is what they
  // unshard on top at the peak (shard_grad_op keeps every unit from forward to backward;
  // full_shard only one or two units at a time, left out here as the seeds do).
  double weights = 0, gathered = 0, grads = 0, optimizer = 0, activations = 0;
  double modelStates() const { return weights + gathered + grads + optimizer; }
  double total() const { return modelStates() + activations; }
  bool fits = true;  // total <= the budget
};

// One row per strategy and world size, in the order of modelStateStrategies(); world sizes that are
// not a multiple of the tensor-parallel degree are left out.
std::vector<ModelStateRow> modelStateTable(const ModelStateCase& c);
// One of those rows.
ModelStateRow modelStateRow(const ModelStateCase& c, const ModelStateStrategy& strategy, int world);

// The fewest GPUs (from 1, or a multiple of the tensor-parallel degree) whose budget holds the model states
// under `strategy`, or nothing when no
// number of GPUs does (what a strategy keeps whole already exceeds one GPU's budget; under HSDP, when
// its shard group of S does not hold them: more replicas do not help). Needs a budget.
std::optional<int> fewestGpus(const ModelStateCase& c, const ModelStateStrategy& strategy);

// The most parameters whose model states fit `world` GPUs' budgets under `strategy`.
double largestModel(const ModelStateCase& c, const ModelStateStrategy& strategy, int world);

}  // namespace shardscope::estimate
