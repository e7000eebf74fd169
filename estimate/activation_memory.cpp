#include "estimate/activation_memory.h"

#include <algorithm>

#include "files/user_json.h"

namespace shardscope::estimate {

namespace {

// The paper's per-layer coefficients for e-byte activations: bytes per s b h, and per a s^2 b.
double perSbh(int e) { return 16.0 * e + 2.0; }
double perAssb(int e) { return 2.0 * e + 1.0; }
// Of perSbh, what tensor parallelism leaves whole on every GPU: the two LayerNorms' inputs and the
// inputs of the attention's and the MLP's first linear (4 values), and the two dropout masks.
double wholeSbh(int e) { return 4.0 * e + 2.0; }

}  // namespace

double transformerActivationBytes(const TransformerShape& t, Recompute recompute, int e, TensorParallel tp) {
  const double sbh = static_cast<double>(t.seq) * t.microBatch * t.hidden;
  const double d = std::max(1, tp.degree);
  // Per s b h: what stays whole on every GPU (unless the sequence is split), and what is divided.
  const double whole = tp.sequence ? wholeSbh(e) / d : wholeSbh(e), divided = (perSbh(e) - wholeSbh(e)) / d;
  double perLayer = 0;
  switch (recompute) {
    case Recompute::None:
      perLayer = sbh * (whole + divided + perAssb(e) * t.heads * t.seq / (d * static_cast<double>(t.hidden)));
      break;
    case Recompute::Selective:
      perLayer = sbh * (whole + divided);
      break;
    case Recompute::Full:
      perLayer = e * sbh / (tp.sequence ? d : 1.0);
      break;
  }
  return perLayer * t.layers;
}

std::string transformerActivationFormula(Recompute recompute, int e, TensorParallel tp) {
  const auto n = [](double v) { return files::shownNumber(v); };
  if (tp.degree <= 1) {
    switch (recompute) {
      case Recompute::None:
        return "sbh(" + n(perSbh(e)) + " + " + n(perAssb(e)) + "as/h)";
      case Recompute::Selective:
        return n(perSbh(e)) + " sbh";
      case Recompute::Full:
        return n(e) + " sbh";
    }
  }
  const std::string scores = " + " + n(perAssb(e)) + "as/(ht))";
  const std::string split =
      tp.sequence ? "sbh(" + n(perSbh(e)) + "/t" : "sbh(" + n(wholeSbh(e)) + " + " + n(perSbh(e) - wholeSbh(e)) + "/t";
  switch (recompute) {
    case Recompute::None:
      return split + scores;
    case Recompute::Selective:
      return split + ")";
    case Recompute::Full:
      return n(e) + (tp.sequence ? " sbh/t" : " sbh");
  }
  return "";
}

TensorParallelTraffic tensorParallelTraffic(const TransformerShape& shape, Recompute recompute, int e,
                                            TensorParallel tp) {
  TensorParallelTraffic out;
  const int perLayer = recompute == Recompute::Full ? 6 : 4;
  out.allReduces = perLayer * shape.layers;
  out.sizeBytes = static_cast<double>(shape.seq) * shape.microBatch * shape.hidden * e;
  const double t = std::max(1, tp.degree);
  out.sentBytes = static_cast<double>(out.allReduces) * 2.0 * (t - 1) / t * out.sizeBytes;
  out.formula = std::to_string(perLayer) + " x L " +
                (tp.sequence ? "all-gather + reduce-scatter pairs" : "all-reduces") + " of " + files::shownNumber(e) +
                " sbh bytes, each sending 2(t-1)/t of it" +
                (recompute == Recompute::Full ? " (full recomputation runs the forward's 2 again)" : "");
  return out;
}

std::optional<int> parseActivationPrecision(const std::string& text) {
  if (text == "bf16" || text == "fp16") return 2;
  if (text == "fp32") return 4;
  return std::nullopt;
}

const std::vector<ArchitecturePreset>& architecturePresets() {
  static const std::vector<ArchitecturePreset> presets = {
      {"llama2-7b", {32, 4096, 32, 4096, 1}, 6.74e9, false},  {"llama2-13b", {40, 5120, 40, 4096, 1}, 13.0e9, false},
      {"llama2-70b", {80, 8192, 64, 4096, 1}, 69.0e9, false}, {"llama3-8b", {32, 4096, 32, 8192, 1}, 8.03e9, false},
      {"llama3-70b", {80, 8192, 64, 8192, 1}, 70.6e9, false}, {"gpt3-175b", {96, 12288, 96, 2048, 1}, 175e9, true},
  };
  return presets;
}

std::optional<ArchitecturePreset> parseArchitecture(const std::string& text) {
  for (const auto& p : architecturePresets()) {
    if (text == p.name) return p;
  }
  ArchitecturePreset custom{"custom", {}, 0, true};
  int64_t* fields[] = {&custom.shape.layers, &custom.shape.hidden, &custom.shape.heads, &custom.shape.seq};
  size_t at = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t end = i < 3 ? text.find(',', at) : text.size();
    if (end == std::string::npos || end == at) return std::nullopt;
    const std::string part = text.substr(at, end - at);
    if (part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9) return std::nullopt;
    *fields[i] = std::stoll(part);
    if (*fields[i] <= 0) return std::nullopt;
    at = end + 1;
  }
  return custom;
}

std::optional<Recompute> parseRecompute(const std::string& text) {
  if (text == "none") return Recompute::None;
  if (text == "selective") return Recompute::Selective;
  if (text == "full") return Recompute::Full;
  return std::nullopt;
}

namespace {

// Under --sequence-parallel (gpt, --tp t): every b s h a block keeps is split along the sequence or
// over the heads, so all 16 divide by t, and the norms' statistics cover a rank's s/t tokens; the
// heads' log-sum-exp covers the whole sequence for a/t heads. The embedding's output is a rank's
// tokens; the head keeps the whole sequence's final norm output (the LM head is whole) and its
// statistics of a rank's tokens.
GptActivations sequenceParallelActivations(const config::RunConfig& c, int64_t e, int64_t b) {
  const int64_t t = c.tp, s = c.seq, h = c.hidden, a = c.heads, v = c.vocab;
  const int64_t tokens = b * (s / t), bs = b * s;  // a rank's b s/t, and the whole b s
  const bool checkpointed = c.activationCheckpointing == config::Checkpointing::Blocks;
  const int64_t embedding = e * tokens * h + 8 * s;
  const int64_t block = e * 16 * tokens * h + e * 4 * tokens + 4 * (a / t) * bs;
  const int64_t perBlock = checkpointed ? e * tokens * h : block;
  const int64_t head = e * 2 * tokens + e * bs * h + 4 * bs * v + 8;
  const std::string eb = std::to_string(e) + " B";
  GptActivations out;
  out.bytes = embedding + c.layers * perBlock + head;
  out.embedding = embedding, out.perBlock = perBlock, out.head = head;
  out.formula = "b = " + std::to_string(b) + " samples x s = " + std::to_string(s) +
                " tokens per micro-batch, t = " + std::to_string(t) + " (sequence parallel): " +
                (checkpointed ? "L x " + eb + " x bsh/t (checkpointed blocks keep their output)"
                              : "L x (" + eb + " x (16 bsh/t + 4 bs/t) + 4 B x (a/t) bs)") +
                " + embedding " + eb + " x bsh/t + head (" + eb +
                " x (bsh + 2 bs/t) + 4 B x V bs); Korthikanti et "
                "al. 2022's count without dropout, with fused attention";
  return out;
}

}  // namespace

GptActivations gptSavedActivations(const config::RunConfig& c) {
  const int64_t e = c.precision == config::Precision::Bf16 ? 2 : 4;  // the compute dtype's bytes
  // Under --tp t a tensor group shares one data rank's samples (config/tensor_parallel.h).
  const int64_t t = std::max(1, c.tp);
  const int64_t b = c.batch / (c.world / t) / c.accumulate, s = c.seq, h = c.hidden, a = c.heads, v = c.vocab;
  if (c.sequenceParallel && t > 1) return sequenceParallelActivations(c, e, b);
  const int64_t bsh = b * s * h, bs = b * s, r = c.loraRank;
  const bool lora = r > 0, checkpointed = c.activationCheckpointing == config::Checkpointing::Blocks;
  // The embedding's output (the first block's input); the position indices (int64) for the
  // embedding's gradient, unless it is frozen (LoRA).
  const int64_t embedding = e * bsh + (lora ? 0 : 8 * s);
  // A block: the first LayerNorm's output (1), q, k, v (3), the attention's output (1), the
  // residual sum (1), the second LayerNorm's output (1), the MLP's 4h pre-activation and GELU
  // output (8) and the block's output (1): 16 b s h; the LayerNorms' mean and rstd (4 b s, in the
  // compute dtype) and the attention's log-sum-exp (a b s, fp32). LoRA adds each of the 4
  // adapters' inner activation (r b s); the first block's LayerNorm then has nothing to train
  // before or in it and keeps no statistics. Under --tp t a rank keeps 1/t of what its heads and
  // its slice of the MLP compute (q, k, v, the attention's output, the MLP's 8: 12 bsh/t, and
  // a/t heads' log-sum-exp) and the other 4 bsh whole.
  const int64_t block = e * (4 * bsh + 12 * bsh / t) + e * 4 * bs + 4 * (a / t) * bs + e * 4 * r * bs;
  const int64_t perBlock = checkpointed ? e * bsh : block;  // checkpointed: its output until backward reruns it
  const int64_t blocks = c.layers * perBlock - (checkpointed || !lora ? 0 : e * 2 * bs);
  // The head: the final LayerNorm's statistics and output (not kept when the LM head is frozen),
  // log-softmax's fp32 output over the vocabulary, and the loss and its weight (fp32 scalars).
  const int64_t head = e * 2 * bs + (lora ? 0 : e * bsh) + 4 * bs * v + 8;
  GptActivations out;
  out.bytes = embedding + blocks + head;
  out.embedding = embedding, out.perBlock = perBlock, out.head = head;
  const std::string eb = std::to_string(e) + " B";
  out.formula = "b = " + std::to_string(b) + " samples x s = " + std::to_string(s) + " tokens per micro-batch: " +
                (checkpointed ? "L x " + eb + " x bsh (checkpointed blocks keep their output)"
                 : t > 1      ? "L x (" + eb + " x ((4 + 12/t) bsh + 4 bs) + 4 B x (a/t) bs), t = " + std::to_string(t)
                              : "L x (" + eb + " x (16 bsh + 4 bs" + (lora ? " + 4 r bs" : "") + ") + 4 B x a bs)") +
                " + embedding " + eb + " x bsh + head (" + eb + " x (" + (lora ? "" : "bsh + ") +
                "2 bs) + 4 B x V bs); Korthikanti et al. 2022's count without dropout, with fused attention";
  return out;
}

}  // namespace shardscope::estimate
