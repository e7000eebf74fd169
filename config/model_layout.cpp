#include "config/model_layout.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <stdexcept>

namespace shardscope::config {

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

// inp = Linear(features, hidden); blocks.i = Linear(hidden, hidden); head = Linear(hidden, classes).
std::vector<ParamSpec> mlpLayout(const RunConfig& c) {
  const int64_t f = c.features, h = c.hidden, k = c.classes;
  std::vector<ParamSpec> p;
  p.push_back({"inp.weight", {h, f}, kRootUnit});
  p.push_back({"inp.bias", {h}, kRootUnit});
  for (int i = 0; i < c.layers; ++i) {
    const std::string prefix = "blocks." + std::to_string(i) + ".";
    p.push_back({prefix + "weight", {h, h}, i});
    p.push_back({prefix + "bias", {h}, i});
  }
  p.push_back({"head.weight", {k, h}, kRootUnit});
  p.push_back({"head.bias", {k}, kRootUnit});
  return p;
}

// Token and position embeddings, pre-LayerNorm blocks, final LayerNorm, LM head without bias.
std::vector<ParamSpec> gptLayout(const RunConfig& c) {
  const int64_t h = c.hidden, v = c.vocab, t = c.seq;
  std::vector<ParamSpec> p;
  p.push_back({"wte.weight", {v, h}, kRootUnit});
  p.push_back({"wpe.weight", {t, h}, kRootUnit});
  for (int i = 0; i < c.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    p.push_back({b + "ln1.weight", {h}, i});
    p.push_back({b + "ln1.bias", {h}, i});
    // No qkv bias (as in Llama): a key bias only shifts each softmax row by a constant, so its
    // true gradient is zero and Adam would turn rounding noise in it into full-size updates.
    p.push_back({b + "attn.qkv.weight", {3 * h, h}, i});
    p.push_back({b + "attn.proj.weight", {h, h}, i});
    p.push_back({b + "attn.proj.bias", {h}, i});
    p.push_back({b + "ln2.weight", {h}, i});
    p.push_back({b + "ln2.bias", {h}, i});
    p.push_back({b + "mlp.fc.weight", {4 * h, h}, i});
    p.push_back({b + "mlp.fc.bias", {4 * h}, i});
    p.push_back({b + "mlp.proj.weight", {h, 4 * h}, i});
    p.push_back({b + "mlp.proj.bias", {h}, i});
  }
  p.push_back({"ln_f.weight", {h}, kRootUnit});
  p.push_back({"ln_f.bias", {h}, kRootUnit});
  p.push_back({"lm_head.weight", {v, h}, kRootUnit});
  return p;
}

// Freezes every base parameter and appends the adapters of each block after its parameters.
std::vector<ParamSpec> withLoraAdapters(const std::vector<ParamSpec>& base, const RunConfig& c) {
  const int64_t r = c.loraRank;
  const auto targets = loraTargets(c);
  std::vector<ParamSpec> out;
  for (size_t i = 0; i < base.size(); ++i) {
    ParamSpec frozen = base[i];
    frozen.trainable = false;
    out.push_back(frozen);
    const bool lastOfBlock = base[i].unit != kRootUnit && (i + 1 == base.size() || base[i + 1].unit != base[i].unit);
    if (!lastOfBlock) continue;
    const std::string prefix = "blocks." + std::to_string(base[i].unit) + ".";
    for (const auto& target : targets) {
      const std::string layer = target.empty() ? prefix : prefix + target + ".";
      const std::string weight = layer + "weight";
      // Looked for within this block only (it ends at i): the whole layout per block would be quadratic.
      auto it = base.begin() + static_cast<std::ptrdiff_t>(i) + 1;
      while (it != base.begin() && std::prev(it)->unit == base[i].unit && std::prev(it)->name != weight) --it;
      it = it != base.begin() && std::prev(it)->name == weight ? std::prev(it) : base.end();
      if (it == base.end()) throw std::logic_error("LoRA target " + weight + " is not in the model");
      const int64_t outDim = it->shape[0], inDim = it->shape[1];
      out.push_back({layer + "lora_A", {r, inDim}, base[i].unit, true});
      out.push_back({layer + "lora_B", {outDim, r}, base[i].unit, true});
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> loraTargets(const RunConfig& config) {
  if (config.model == ModelKind::Mlp) return {""};  // a block is one Linear: blocks.<i>.lora_A
  return {"attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"};
}

std::vector<ParamSpec> modelLayout(const RunConfig& config) {
  const std::vector<ParamSpec> base = config.model == ModelKind::Gpt ? gptLayout(config) : mlpLayout(config);
  return config.loraRank > 0 ? withLoraAdapters(base, config) : base;
}

std::vector<FlatUnit> flatUnits(const std::vector<ParamSpec>& layout, int blocks) {
  // One pass over the layout into (slot, trainable) bins: the blocks in order, then the root. A
  // loop over the layout per block would be quadratic in layers (two minutes for 30,000 layers).
  struct Bin {
    std::vector<int> params;
    int64_t numel = 0;
  };
  std::vector<std::array<Bin, 2>> bins(static_cast<size_t>(blocks) + 1);
  for (size_t i = 0; i < layout.size(); ++i) {
    const int unit = layout[i].unit;
    if (unit != kRootUnit && (unit < 0 || unit >= blocks)) continue;
    Bin& bin = bins[unit == kRootUnit ? blocks : unit][layout[i].trainable ? 1 : 0];
    bin.params.push_back(static_cast<int>(i));
    bin.numel += layout[i].numel();
  }
  std::vector<FlatUnit> out;
  for (int slot = 0; slot <= blocks; ++slot) {
    const int unit = slot == blocks ? kRootUnit : slot;
    const std::string name = unit == kRootUnit ? "root" : "blocks." + std::to_string(unit);
    const size_t first = out.size();
    for (const bool trainable : {false, true}) {
      Bin& bin = bins[slot][trainable ? 1 : 0];
      if (!bin.params.empty()) out.push_back(FlatUnit{name, unit, trainable, std::move(bin.params), bin.numel});
    }
    if (out.size() - first == 2) out.back().name += ".lora";  // the adapters beside frozen weights
  }
  return out;
}

std::string trainingLabel(const RunConfig& config) {
  std::string label = config.loraRank > 0 ? ", LoRA rank " + std::to_string(config.loraRank) : "";
  if (config.tp > 1) label += ", tensor parallel " + std::to_string(config.tp);
  if (config.tp > 1 && config.sequenceParallel) label += ", sequence parallel";
  if (config.accumulate > 1) label += ", " + std::to_string(config.accumulate) + " micro-batches per step";
  if (config.activationCheckpointing == Checkpointing::Blocks) label += ", blocks checkpointed";
  return label;
}

int64_t trainableElements(const RunConfig& config) {
  int64_t n = 0;
  for (const auto& p : modelLayout(config)) n += p.trainable ? p.numel() : 0;
  return n;
}

std::vector<int64_t> unitElements(const RunConfig& config) {
  std::vector<int64_t> out(static_cast<size_t>(config.layers) + 1, 0);
  for (const auto& p : modelLayout(config)) {
    out[p.unit == kRootUnit ? out.size() - 1 : static_cast<size_t>(p.unit)] += p.numel();
  }
  return out;
}

}  // namespace shardscope::config
