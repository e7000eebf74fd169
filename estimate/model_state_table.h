// The seed documents' memory tables, live: model-state bytes per GPU for a model of any size under
// each strategy, from bytes per parameter for weights, gradients and optimizer state. Like those
// tables it leaves out activations, communication buffers and allocator overhead, and it is a
// prediction: nothing here was measured.
#pragma once

#include <string>
#include <vector>

namespace shardscope::estimate {

// Bytes per parameter. The default is the ZeRO paper's mixed-precision Adam: bf16 weights and
// gradients (2 + 2) and fp32 master weights and two moments (12). The seeds' 7B example uses
// 2, 2, 4 (56 GB on one GPU); their Llama-70B example uses 2, 2, 8 (840 GB).
struct BytesPerParameter {
  double weights = 2, grads = 2, optimizer = 12;
};

struct ModelStateCase {
  double parameters = 70e9;
  BytesPerParameter bytes;
  std::vector<int> worlds = {1, 8, 16};
  double gpuMemoryBytes = 80e9;  // 0: no verdict
  // The share of the parameters that train: 1 for full fine-tuning; LoRA's adapters are well under
  // 1 %. Frozen weights have no gradients and no optimizer state, but every strategy still holds
  // them (ddp whole, the sharded strategies 1/N, gathered for compute).
  double trainedFraction = 1.0;
};

struct ModelStateRow {
  std::string strategy;  // ddp | zero1 | shard_grad_op | full_shard
  int world = 1;
  // Per GPU, bytes. Sharded strategies hold 1/N of the weights at rest; `gathered` is what they
  // unshard on top at the peak (shard_grad_op keeps every unit from forward to backward;
  // full_shard only one or two units at a time, left out here as the seeds do).
  double weights = 0, gathered = 0, grads = 0, optimizer = 0;
  double total() const { return weights + gathered + grads + optimizer; }
  bool fits = true;  // total <= the GPU's memory
};

// One row per strategy and world size, in the order ddp, zero1, shard_grad_op, full_shard.
std::vector<ModelStateRow> modelStateTable(const ModelStateCase& c);

}  // namespace shardscope::estimate
