#include "engine/models/gpt_model.h"

#include <ATen/CPUGeneratorImpl.h>

#include "engine/models/sequence_parallel.h"
#include "engine/models/unread_output_projection.h"

namespace shardscope::engine {

namespace {
constexpr double kLayerNormEps = 1e-5;
}

GptModel::GptModel(const config::RunConfig& c, const TensorParallelPart& part)
    : hidden_(c.hidden),
      heads_(c.heads),
      seq_(c.seq),
      vocab_(c.vocab),
      lora_(c.loraRank > 0),
      sequenceParallel_(c.sequenceParallel && part.ranks > 1) {
  numBlocks_ = c.layers;
  layOut(c, part);  // block() indexes a block's parameters by position
}

at::Tensor GptModel::columnParallel(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                    const std::string& label, const LoraPair* adapter) const {
  if (sequenceParallel_) return gatheredLinear(x, weight, bias, tensorParallel(), label);  // no LoRA under SP
  Communicator* group = tensorParallel().group;
  if (!group) return adapter ? linearWithAdapter(x, weight, bias, adapter->a, adapter->b) : at::linear(x, weight, bias);
  // The adapter reads the same copy: its A's share of x's gradient is summed with the weight's.
  const at::Tensor in = copyToTensorGroup(x, group, label);
  const at::Tensor out = at::linear(in, weight, bias);
  return adapter ? out + adapterUpdate(in, *adapter) : out;
}

at::Tensor GptModel::rowParallel(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                 const std::string& label, const LoraPair* adapter) const {
  Communicator* group = tensorParallel().group;
  if (!group) return adapter ? linearWithAdapter(x, weight, bias, adapter->a, adapter->b) : at::linear(x, weight, bias);
  // The adapter's update from this rank's slice of the inputs is partial too: summed with the product's.
  at::Tensor partial = at::linear(x, weight);
  if (adapter) partial = partial + adapterUpdate(x, *adapter);
  if (sequenceParallel_) return reduceScatterToSequence(partial, tensorParallel(), label) + bias;
  return reduceFromTensorGroup(partial, group, label) + bias;
}

std::vector<at::Tensor> GptModel::withSharedParameters(const std::vector<at::Tensor>& live,
                                                       const std::vector<int>& shared, const std::string& label) const {
  std::vector<at::Tensor> in;
  for (int i : shared) in.push_back(live[i]);
  const auto out = sharedAcrossTensorGroup(in, tensorParallel(), label);
  std::vector<at::Tensor> p = live;
  for (size_t k = 0; k < out.size(); ++k) p[shared[k]] = out[k];
  return p;
}

at::Tensor GptModel::block(const at::Tensor& x, const std::vector<at::Tensor>& live, int f, bool outputRead) const {
  const int n = tensorParallel().ranks;
  // Under --tp this rank's heads/N heads, H/N of the attention's width. Under --sequence-parallel x
  // holds this rank's T/N tokens; the attention sees the whole sequence.
  const int64_t B = x.size(0), H = hidden_, hd = H / heads_, heads = heads_ / n, width = H / n;
  // Adapter k (qkv, attn proj, fc, mlp proj) is the pair after the block's own 11 parameters.
  const int adapters = f + kBlockParams;
  // The tensor group's collectives' names; none to build without one (every block, every step).
  const std::string layer =
      tensorParallel().group ? "blocks." + std::to_string((f - 2) / blockParams()) + "." : std::string();
  // Replicated parameters that act on this rank's part only, their gradients summed over the group:
  // under --sequence-parallel the norms and the row-parallel biases (on its tokens); under LoRA the
  // adapters' whole halves (qkv's and fc's A, the projections' B, on its slice).
  std::vector<at::Tensor> shared;
  if (sequenceParallel_)
    shared = withSharedParameters(live, {f, f + 1, f + 4, f + 5, f + 6, f + 10}, layer + "norms and biases");
  if (lora_ && !layer.empty()) {
    shared = withSharedParameters(live, {adapters, adapters + 3, adapters + 4, adapters + 7}, layer + "lora adapters");
  }
  const std::vector<at::Tensor>& p = shared.empty() ? live : shared;
  auto label = [&](const char* name) { return layer.empty() ? std::string() : layer + name; };
  // Adapter k (qkv, attn proj, fc, mlp proj): its A and B.
  auto adapter = [&](int k) { return lora_ ? LoraPair{p[adapters + 2 * k], p[adapters + 2 * k + 1]} : LoraPair{}; };
  const LoraPair pairs[] = {adapter(0), adapter(1), adapter(2), adapter(3)};
  auto linear = [&](const at::Tensor& in, int weight, const at::Tensor& bias, int k, const char* name) {
    return columnParallel(in, p[weight], bias, label(name), lora_ ? &pairs[k] : nullptr);
  };
  auto qkv = linear(at::layer_norm(x, {H}, p[f + 0], p[f + 1], kLayerNormEps), f + 2, {}, 0, "attn.qkv")
                 .split(width, /*dim=*/2);
  const int64_t T = qkv[0].size(1);
  auto split = [&](const at::Tensor& t) { return t.view({B, T, heads, hd}).transpose(1, 2); };
  auto y = at::scaled_dot_product_attention(split(qkv[0]), split(qkv[1]), split(qkv[2]),
                                            /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true);
  y = y.transpose(1, 2).contiguous().view({B, T, width});
  auto project = [&](const at::Tensor& in, int weight, int k, const char* name) {
    return rowParallel(in, p[weight], p[weight + 1], label(name), lora_ ? &pairs[k] : nullptr);
  };
  auto h = x + project(y, f + 3, 1, "attn.proj");
  auto m = at::gelu(linear(at::layer_norm(h, {H}, p[f + 5], p[f + 6], kLayerNormEps), f + 7, p[f + 8], 2, "mlp.fc"));
  // Under LoRA the projection has an adapter too: recomputed whole. Under --tp the all-reduce's
  // backward passes the gradient through, so the unread product's backward is the slice's own;
  // under --sequence-parallel the product is reduce-scattered, and its backward needs that.
  if (!outputRead && !lora_ && !sequenceParallel_) return unreadOutputProjection(h, m, p[f + 9], p[f + 10]);
  return h + project(m, f + 9, 3, "mlp.proj");
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
    auto embedded = at::embedding(p[0], input) + at::embedding(p[1], pos);
    // Under --sequence-parallel the blocks take this rank's tokens of it.
    return sequenceParallel_ ? scatterToSequence(embedded, tensorParallel(), "embedding") : embedded;
  }
  if (stage <= numBlocks_) return block(input, p, 2 + blockParams() * (stage - 1));
  const int f = 2 + blockParams() * numBlocks_;
  at::Tensor h;
  if (sequenceParallel_) {
    // The final LayerNorm on this rank's tokens (its gradients summed over the group), then the
    // whole sequence for the LM head, which is whole (as torchtitan: SequenceParallel on the norm).
    const auto norm = sharedAcrossTensorGroup({p[f], p[f + 1]}, tensorParallel(), "ln_f");
    h = gatherFromSequence(at::layer_norm(input, {hidden_}, norm[0], norm[1], kLayerNormEps), tensorParallel(),
                           "lm_head");
  } else {
    h = at::layer_norm(input, {hidden_}, p[f], p[f + 1], kLayerNormEps);
  }
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

}  // namespace shardscope::engine
