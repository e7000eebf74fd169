// The parameters of shardscope's models as names, shapes and FSDP units, in registration order.
// The engine builds its models from this list and the estimator counts from it, so a prediction is
// about exactly the model that runs. No tensors here: the UI links this library too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope::config {

constexpr int kRootUnit = -1;

struct ParamSpec {
  std::string name;  // PyTorch state_dict name, e.g. "blocks.0.weight"
  std::vector<int64_t> shape;
  int unit = kRootUnit;   // FSDP unit: block index, or kRootUnit
  bool trainable = true;  // false: frozen (requires_grad=False), e.g. a base weight under LoRA

  int64_t numel() const;
};

// The parameters of config.model (mlp | gpt) with the config's sizes. The model's forward indexes
// them by position, so the order is part of the model's definition.
//
// With config.loraRank r > 0 (LoRA, as PEFT's LoraConfig(r=r, lora_alpha=r) on the blocks' linear
// layers): every weight above is frozen, and each block matrix W [out, in] gets two trainable
// adapters, W.lora_A [r, in] and W.lora_B [out, r], listed after the block's own parameters. The
// layer computes x W^T + b + (x A^T) B^T; B starts at zero, so training starts from the base model.
std::vector<ParamSpec> modelLayout(const RunConfig& config);

// Names of the block matrices that carry adapters under LoRA, in the order the block lists them,
// e.g. "attn.qkv" for a GPT block (its adapters are "blocks.<i>.attn.qkv.lora_A" and ".lora_B");
// "" for an MLP block, which is one Linear ("blocks.<i>.lora_A").
std::vector<std::string> loraTargets(const RunConfig& config);

// Elements of the parameters that train: all of them, or only the adapters under LoRA.
int64_t trainableElements(const RunConfig& config);

// A flat unit of the sharded strategies (full_shard, shard_grad_op): the parameters flattened,
// padded and sharded together. One per block and one for the root, in that order; a block's or the
// root's frozen and trained parameters go to separate units (frozen first), since a flat shard is
// stepped and reduce-scattered whole (FSDP1's FlatParameter rule). The engine shards exactly these
// and the estimator counts them.
struct FlatUnit {
  std::string name;      // "blocks.3", "root"; "blocks.3.lora" for LoRA's adapters
  int unit = kRootUnit;  // the model unit it belongs to: block index, or kRootUnit
  bool trainable = true;
  std::vector<int> params;  // indices into the layout, in layout order
  int64_t numel = 0;        // unpadded elements
};
std::vector<FlatUnit> flatUnits(const std::vector<ParamSpec>& layout, int blocks);

// How a run trains beyond its model and strategy, appended where a run's model is named:
// ", LoRA rank 8" for a LoRA run, ", tensor parallel 2" under --tp 2, ", 4 micro-batches per step" under gradient
// accumulation,
// ", blocks checkpointed" under activation checkpointing, each that applies, or "" for none.
std::string trainingLabel(const RunConfig& config);

// Elements per model unit (a block, or the root): index u for blocks.u, and the root last. Under
// LoRA the sharded strategies flatten a block's frozen and trained parameters as two units; this
// counts them together.
std::vector<int64_t> unitElements(const RunConfig& config);

}  // namespace shardscope::config
