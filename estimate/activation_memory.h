// Activation memory of a transformer: the bytes forward saves for backward, predicted two ways.
//  - For a model of any size, the closed form of Korthikanti et al. 2022, "Reducing Activation
//    Recomputation in Large Transformer Models" (arXiv:2205.05198), Table 2 with no tensor or
//    sequence parallelism (t = 1): per layer s b h (34 + 5 a s / h) bytes without recomputation,
//    34 s b h with selective recomputation (the attention core recomputed), 2 s b h with full
//    recomputation (only each layer's input kept). It assumes 16-bit activations, dropout after
//    attention and MLP (1-byte masks) and the attention scores materialised (5 a s^2 b). Counted
//    per tensor, those are 16 s b h values and 2 a s^2 b values of e bytes each plus 2 s b h and
//    a s^2 b mask bytes, so activations of e bytes (4: fp32) give s b h (16e + 2) + a s^2 b (2e + 1)
//    per layer, selective s b h (16e + 2), full e s b h; e = 2 is the paper's table.
//  - For shardscope's own gpt, the same count tensor by tensor as LibTorch's autograd saves them:
//    no dropout, and scaled_dot_product_attention's fused kernel keeps a log-sum-exp per head and
//    token instead of the scores, so a block saves 16 s b h values (the paper's 34 s b h bytes less
//    its two dropout masks, in the compute dtype) plus fp32 LayerNorm statistics and log-sum-exp.
// Both are predictions. The summary's `activation_saved_bytes` is the measurement they are held to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope::estimate {

enum class Recompute { None, Selective, Full };

struct TransformerShape {
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, microBatch = 1;
};

// Megatron's tensor parallelism: each layer's attention and MLP split `degree` ways (heads, and the
// MLP's inner width), with, under `sequence`, the LayerNorm and dropout regions split along the
// sequence as well (Korthikanti et al.'s sequence parallelism). degree 1: none.
struct TensorParallel {
  int degree = 1;
  bool sequence = false;
};

// Korthikanti et al.'s per-model total over `layers` layers, bytes per GPU, for activations of
// `elementBytes` bytes (2: the paper's 16-bit; 4: fp32). Dropout masks stay 1 byte. Under tensor
// parallelism of t (the paper's Table 2): what the attention and MLP compute on is divided by t; the
// LayerNorms' inputs, the inputs of the first linear of each, and the dropout masks are whole on
// every GPU (4e + 2 bytes per s b h) unless the sequence is split too.
double transformerActivationBytes(const TransformerShape& shape, Recompute recompute, int elementBytes = 2,
                                  TensorParallel tp = {});

// The per-layer formula those bytes come from, e.g. "sbh(34 + 5as/h)" for 16-bit activations, and
// "sbh(10 + 24/t + 5as/(ht))" under tensor parallelism.
std::string transformerActivationFormula(Recompute recompute, int elementBytes, TensorParallel tp = {});

// What tensor parallelism sends per micro-batch: each layer's forward all-reduces its attention's
// and its MLP's output among the t GPUs of its group, and backward the gradients of their inputs:
// 4 all-reduces of s b h values a layer (6 under full recomputation, whose forward runs again).
// Under sequence parallelism each becomes an all-gather and a reduce-scatter of the same size,
// which send what the all-reduce sends. A GPU sends 2(t-1)/t of each all-reduce's size (the ring).
struct TensorParallelTraffic {
  int64_t allReduces = 0;  // per micro-batch, over every layer
  double sizeBytes = 0;    // each one's size: s b h values of `elementBytes`
  double sentBytes = 0;    // what each GPU sends of them all
  std::string formula;
};
TensorParallelTraffic tensorParallelTraffic(const TransformerShape& shape, Recompute recompute, int elementBytes,
                                            TensorParallel tp);

// bf16 | fp16 (2 bytes) or fp32 (4): the activations' element size; nothing for another name.
std::optional<int> parseActivationPrecision(const std::string& text);

// Well-known shapes, so the seeds' examples get their activations: Llama-2 7B/13B/70B, Llama-3
// 8B/70B, GPT-3 175B (layers, hidden, heads, the context they were trained at, parameters). The
// formula is the paper's GPT layer; Llama's SwiGLU MLP and grouped key/value heads differ from it,
// so for those shapes it is an approximation, labelled as such.
struct ArchitecturePreset {
  const char* name;
  TransformerShape shape;  // microBatch 1
  double parameters;
  bool gptLayer;  // the paper's layer exactly (GPT-3); false: Llama, an approximation
};
const std::vector<ArchitecturePreset>& architecturePresets();

// A preset's name, or "L,H,A,S" (layers, hidden, heads, sequence); nothing when it is neither.
std::optional<ArchitecturePreset> parseArchitecture(const std::string& text);

std::optional<Recompute> parseRecompute(const std::string& text);  // none | selective | full

struct GptActivations {
  int64_t bytes = 0;
  std::string formula;
  // Its parts (bytes = embedding + L x perBlock + head, less LoRA's first-block statistics): what a
  // pipeline stage keeps depends on which of them it runs.
  int64_t embedding = 0, perBlock = 0, head = 0;
};

// What a rank of this gpt run holds of activations when backward begins (one micro-batch's).
GptActivations gptSavedActivations(const config::RunConfig& config);

}  // namespace shardscope::estimate
