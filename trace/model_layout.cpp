#include "trace/model_layout.h"

#include <stdexcept>

namespace shardscope {

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

}  // namespace

std::vector<ParamSpec> modelLayout(const RunConfig& config) {
  if (config.model == "mlp") return mlpLayout(config);
  if (config.model == "gpt") return gptLayout(config);
  throw std::invalid_argument("unknown model '" + config.model + "' (choose mlp or gpt)");
}

std::vector<int64_t> unitElements(const RunConfig& config) {
  std::vector<int64_t> out(static_cast<size_t>(config.layers) + 1, 0);
  for (const auto& p : modelLayout(config)) {
    out[p.unit == kRootUnit ? out.size() - 1 : static_cast<size_t>(p.unit)] += p.numel();
  }
  return out;
}

}  // namespace shardscope
