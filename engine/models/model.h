// The trainable models, written as a chain of stages so a strategy can act between them exactly where
// FSDP's hooks would: stage 0 is the root's input layer, stages 1..layers are the blocks (one FSDP
// unit each), the last stage is the root's head and the loss. Parameters live outside the model, in a
// vector the strategy owns and may rebind (e.g. to views of an all-gathered flat buffer).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "config/model_layout.h"
#include "config/run_config.h"
#include "engine/models/tensor_parallel.h"

namespace shardscope::engine {

struct Batch {
  at::Tensor x;  // mlp: [B, features] float; gpt: [B, seq] int64 tokens
  at::Tensor y;  // mlp: [B] int64 labels;    gpt: [B, seq] int64 next tokens
};

class StageSlice;

class StagedModel {
 public:
  virtual ~StagedModel() = default;

  // The parameters this rank computes with: the whole model's, or under --tp its slices of them
  // (config/tensor_parallel.h; names stay the full model's).
  const std::vector<config::ParamSpec>& params() const { return params_; }
  // How each of params() is divided over the tensor group, by name (Replicated without --tp).
  std::map<std::string, config::TensorSplit> splitsByName() const;
  config::TensorSplit splitOf(size_t index) const { return splits_[index]; }  // params()[index]'s
  const TensorParallelPart& tensorParallel() const { return tp_; }
  int numUnits() const { return numBlocks_; }  // block units; the root unit is extra
  virtual int numStages() const { return numBlocks_ + 2; }
  virtual int stageUnit(int stage) const;  // kRootUnit for the first and last stage
  static std::string unitName(int unit);   // "root" or "blocks.<i>"

  // Runs one stage. `p` holds the current parameter tensors in params() order. The last stage
  // returns the mean cross-entropy of this batch.
  virtual at::Tensor forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                                  const std::vector<at::Tensor>& p) const = 0;
  // The same stage run again for its backward (activation checkpointing): the output's value is
  // not read, only its graph, so a model may leave out what backward does not need.
  virtual at::Tensor recomputeStage(int stage, const at::Tensor& input, const Batch& batch,
                                    const std::vector<at::Tensor>& p) const {
    return forwardStage(stage, input, batch, p);
  }

  // Deterministic initial parameters (float32, CPU) from the seed; identical on every rank of a
  // tensor group's place (the full model's values, sliced). Streams them one at a time in params()
  // order, so a sharded strategy never holds them all.
  void forEachInitialParameter(int64_t seed, const std::function<void(size_t index, at::Tensor value)>& fn) const;
  std::vector<at::Tensor> initParameters(int64_t seed) const;
  // The whole model's initial parameters by name, whatever this rank's slice (--export's init.pt).
  std::map<std::string, at::Tensor> fullInitialParameters(int64_t seed) const;

  // The whole global batch of one step, deterministic in (seed, step); CPU tensors.
  virtual Batch globalBatch(int64_t seed, int step, int batchSize) const = 0;

  // The whole model's parameter count (under --tp too: what model FLOPs are counted from).
  int64_t parameterCount() const;

 protected:
  // Sets params() for `config` on this rank of its tensor group (the whole model when part.ranks is 1).
  void layOut(const config::RunConfig& config, const TensorParallelPart& part);
  // The whole model's initial values in modelLayout() order, from which forEachInitialParameter slices.
  virtual void forEachFullInitialParameter(int64_t seed,
                                           const std::function<void(size_t index, at::Tensor value)>& fn) const = 0;
  const std::vector<config::ParamSpec>& fullParams() const { return fullParams_; }

  std::vector<config::ParamSpec> params_;
  int numBlocks_ = 0;

 private:
  friend class StageSlice;  // a pipeline stage's part of a model: its parameters picked from the whole's

  std::vector<config::ParamSpec> fullParams_;
  std::vector<config::TensorSplit> splits_;
  TensorParallelPart tp_;
};

// Rows [rank*B/world, (rank+1)*B/world) of the global batch: each rank's contiguous shard (under
// --tp, pass the data rank and the data ranks: a tensor group shares one shard).
Batch localShard(const Batch& global, int rank, int worldSize);

// x W^T + b plus LoRA's low-rank update (x A^T) B^T (scaling lora_alpha / r = 1), in PEFT's order.
at::Tensor linearWithAdapter(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             const at::Tensor& loraA, const at::Tensor& loraB);
// A linear layer's LoRA adapter: A (r x in) and B (out x r), or under --tp this rank's part of them.
struct LoraPair {
  at::Tensor a, b;
};
// (x A^T) B^T: the adapter's update alone.
inline at::Tensor adapterUpdate(const at::Tensor& x, const LoraPair& adapter) {
  return at::linear(at::linear(x, adapter.a), adapter.b);
}

// A LoRA B matrix ("....lora_B"): initialised to zero.
bool isLoraB(const std::string& paramName);
// A LoRA A matrix ("....lora_A").
bool isLoraA(const std::string& paramName);

// The generator LoRA's A matrices draw from: apart from the base weights' generator, so that one
// seed gives the same base model with and without --lora-rank.
at::Generator loraGenerator(int64_t seed);

// Runs the whole model on `batch` with parameters `p` and returns the loss (for single-process use).
at::Tensor forwardAll(const StagedModel& model, const Batch& batch, const std::vector<at::Tensor>& p);

}  // namespace shardscope::engine
