#include "engine/models/gpt_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include "engine/models/unread_output_projection.h"

namespace shardscope {

namespace {
constexpr double kLayerNormEps = 1e-5;
}

GptModel::GptModel(const RunConfig& c, const TensorParallelPart& part)
    : hidden_(c.hidden), heads_(c.heads), seq_(c.seq), vocab_(c.vocab), lora_(c.loraRank > 0) {
  numBlocks_ = c.layers;
  layOut(c, part);  // block() indexes a block's parameters by position
}

at::Tensor GptModel::rowParallel(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 const std::string& label) const {
  Communicator* group = tensorParallel().group;
  if (!group) return at::linear(x, weight, bias);
  return reduceFromTensorGroup(at::linear(x, weight), group, label) + bias;
}

at::Tensor GptModel::block(const at::Tensor& x, const std::vector<at::Tensor>& p, int f, bool outputRead) const {
  const int n = tensorParallel().ranks;
  // Under --tp this rank's heads/N heads, H/N of the attention's width.
  const int64_t B = x.size(0), T = x.size(1), H = hidden_, hd = H / heads_, heads = heads_ / n, width = H / n;
  // Adapter k (qkv, attn proj, fc, mlp proj) is the pair after the block's own 11 parameters.
  const int adapters = f + kBlockParams;
  Communicator* group = tensorParallel().group;
  // The tensor group's collectives' names; none to build without one (every block, every step).
  const std::string layer = group ? "blocks." + std::to_string((f - 2) / blockParams()) + "." : std::string();
  auto linear = [&](const at::Tensor& in, int weight, const at::Tensor& bias, int k) {
    return lora_ ? linearWithAdapter(in, p[weight], bias, p[adapters + 2 * k], p[adapters + 2 * k + 1])
                 : at::linear(in, p[weight], bias);
  };
  auto a = copyToTensorGroup(at::layer_norm(x, {H}, p[f + 0], p[f + 1], kLayerNormEps), group, layer + "attn.qkv");
  auto qkv = linear(a, f + 2, {}, 0).split(width, /*dim=*/2);
  auto split = [&](const at::Tensor& t) { return t.view({B, T, heads, hd}).transpose(1, 2); };
  auto y = at::scaled_dot_product_attention(split(qkv[0]), split(qkv[1]), split(qkv[2]),
                                            /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true);
  y = y.transpose(1, 2).contiguous().view({B, T, width});
  // LoRA is refused under --tp (config/tensor_parallel.h): its adapted layers are whole.
  auto h = x + (lora_ ? linear(y, f + 3, p[f + 4], 1) : rowParallel(y, p[f + 3], p[f + 4], layer + "attn.proj"));
  auto m = copyToTensorGroup(at::layer_norm(h, {H}, p[f + 5], p[f + 6], kLayerNormEps), group, layer + "mlp.fc");
  m = at::gelu(linear(m, f + 7, p[f + 8], 2));
  // Under LoRA the projection has an adapter too: recomputed whole. Under --tp the all-reduce's
  // backward passes the gradient through, so the unread product's backward is the slice's own.
  if (!outputRead && !lora_) return unreadOutputProjection(h, m, p[f + 9], p[f + 10]);
  return h + (lora_ ? linear(m, f + 9, p[f + 10], 3) : rowParallel(m, p[f + 9], p[f + 10], layer + "mlp.proj"));
}

at::Tensor GptModel::recomputeStage(int stage, const at::Tensor& input, const Batch& batch,
                                    const std::vector<at::Tensor>& p) const {
  if (stage < 1 || stage > numBlocks_) return forwardStage(stage, input, batch, p);
  return block(input, p, 2 + blockParams() * (stage - 1), /*outputRead=*/false);
}

at::Tensor GptModel::forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                                  const std::vector<at::Tensor>& p) const {
  if (stage == 0) {
    const int64_t T = input.size(1);
    auto pos = at::arange(T, at::TensorOptions().dtype(at::kLong).device(input.device()));
    return at::embedding(p[0], input) + at::embedding(p[1], pos);
  }
  if (stage <= numBlocks_) return block(input, p, 2 + blockParams() * (stage - 1));
  const int f = 2 + blockParams() * numBlocks_;
  auto h = at::layer_norm(input, {hidden_}, p[f], p[f + 1], kLayerNormEps);
  auto logits = at::linear(h, p[f + 2]);
  // The loss in fp32 whatever the compute dtype (a no-op under fp32), as autocast would do.
  return at::cross_entropy_loss(logits.view({-1, vocab_}).to(at::kFloat), batch.y.reshape({-1}));
}

void GptModel::forEachFullInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const {
  // GPT-2 style: N(0, 0.02) for embeddings and matrices, zero biases, unit LayerNorm gains;
  // LoRA's A like the matrices, its B zero (the adapted model starts as the base model).
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  auto adapterGen = loraGenerator(seed);
  for (size_t i = 0; i < fullParams().size(); ++i) {
    const auto& spec = fullParams()[i];
    const auto& n = spec.name;
    const bool isNorm = n.find("ln") != std::string::npos && n.find("lm_head") == std::string::npos;
    const bool isBias = n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
    at::Tensor t = at::empty(spec.shape, at::kFloat);
    if (isNorm && !isBias)
      t.fill_(1.0);
    else if (isBias || isLoraB(n))
      t.zero_();
    else
      t.normal_(0.0, 0.02, isLoraA(n) ? adapterGen : gen);
    fn(i, t);
  }
}

Batch GptModel::globalBatch(int64_t seed, int step, int batchSize) const {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * 1000003ULL +
                                                      7919ULL * static_cast<uint64_t>(step + 1));
  auto tokens = at::randint(vocab_, {batchSize, seq_ + 1}, gen, at::kLong);
  return {tokens.narrow(1, 0, seq_).contiguous(), tokens.narrow(1, 1, seq_).contiguous()};
}

}  // namespace shardscope
