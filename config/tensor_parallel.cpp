#include "config/tensor_parallel.h"

namespace shardscope::config {

namespace {

bool endsWith(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// LoRA's adapters follow their base weight's split: a column-parallel weight's B (out x r) splits
// by outputs as the weight does and its A (r x in) stays whole; a row-parallel weight's A splits by
// inputs and its B stays whole. The whole halves' gradients are summed over the tensor group.
TensorSplit adapterSplit(const std::string& name, TensorSplit base) {
  const bool inputSide = endsWith(name, ".lora_A");
  switch (base) {
    case TensorSplit::Columns:
    case TensorSplit::FusedColumns3:
      return inputSide ? TensorSplit::Replicated : base;
    case TensorSplit::Rows:
      return inputSide ? TensorSplit::Rows : TensorSplit::Replicated;
    case TensorSplit::Replicated:
      break;
  }
  return TensorSplit::Replicated;
}

bool isAdapter(const std::string& name) { return endsWith(name, ".lora_A") || endsWith(name, ".lora_B"); }

TensorSplit gptSplit(const std::string& name) {
  if (isAdapter(name)) return adapterSplit(name, gptSplit(name.substr(0, name.size() - 6) + "weight"));
  if (endsWith(name, "attn.qkv.weight")) return TensorSplit::FusedColumns3;
  if (endsWith(name, "mlp.fc.weight") || endsWith(name, "mlp.fc.bias")) return TensorSplit::Columns;
  if (endsWith(name, "attn.proj.weight") || endsWith(name, "mlp.proj.weight")) return TensorSplit::Rows;
  return TensorSplit::Replicated;  // norms, embeddings, lm_head, and the biases added after the all-reduce
}

// The mlp's linears in order: inp, blocks.0 .. blocks.L-1, head; pairs (0, 1), (2, 3), ...
int mlpLinearCount(const RunConfig& c) { return c.layers + 2; }

int mlpLinearIndex(const ParamSpec& spec, const RunConfig& c) {
  if (spec.name.rfind("inp.", 0) == 0) return 0;
  if (spec.name.rfind("head.", 0) == 0) return c.layers + 1;
  return spec.unit + 1;
}

TensorSplit mlpSplit(const ParamSpec& spec, const RunConfig& c) {
  const int k = mlpLinearIndex(spec, c);
  const bool bias = endsWith(spec.name, ".bias");
  TensorSplit weight = TensorSplit::Replicated;  // the odd one out: the head
  if (k % 2 == 1) {
    weight = TensorSplit::Rows;
  } else if (k + 1 < mlpLinearCount(c)) {
    weight = TensorSplit::Columns;
  }
  if (isAdapter(spec.name)) return adapterSplit(spec.name, weight);
  return bias && weight == TensorSplit::Rows ? TensorSplit::Replicated : weight;  // added after the all-reduce
}

}  // namespace

std::vector<TensorSplit> tensorSplits(const RunConfig& c) {
  const auto layout = modelLayout(c);
  std::vector<TensorSplit> out(layout.size(), TensorSplit::Replicated);
  if (c.tp <= 1) return out;
  for (size_t i = 0; i < layout.size(); ++i) {
    out[i] = c.model == ModelKind::Gpt ? gptSplit(layout[i].name) : mlpSplit(layout[i], c);
  }
  return out;
}

std::vector<ParamSpec> tensorParallelLayout(const RunConfig& c) {
  auto layout = modelLayout(c);
  const auto splits = tensorSplits(c);
  for (size_t i = 0; i < layout.size(); ++i) {
    switch (splits[i]) {
      case TensorSplit::Replicated:
        break;
      case TensorSplit::Columns:
      case TensorSplit::FusedColumns3:
        layout[i].shape[0] /= c.tp;
        break;
      case TensorSplit::Rows:
        layout[i].shape[1] /= c.tp;
        break;
    }
  }
  return layout;
}

std::vector<std::string> replicatedLinears(const RunConfig& c) {
  if (c.tp <= 1 || c.model != ModelKind::Mlp || mlpLinearCount(c) % 2 == 0) return {};
  return {"head"};
}

TensorPlace tensorPlace(int rank, int worldSize, int tensorRanks) {
  const int n = std::max(1, tensorRanks);
  return {rank / n, std::max(1, worldSize / n), rank % n};
}

}  // namespace shardscope::config
