#include "engine/models/mlp_model.h"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "engine/models/sequence_parallel.h"

namespace shardscope::engine {

MlpModel::MlpModel(const config::RunConfig& c, const TensorParallelPart& part)
    : features_(c.features), hidden_(c.hidden), classes_(c.classes) {
  numBlocks_ = c.layers;
  layOut(c, part);
  blockParams_ = c.loraRank > 0 ? 4 : 2;  // weight, bias (and lora_A, lora_B)
}

at::Tensor MlpModel::linear(const at::Tensor& x, const std::vector<at::Tensor>& p, int w, const std::string& name,
                            const LoraPair* adapter) const {
  Communicator* group = tensorParallel().group;
  switch (group ? splitOf(static_cast<size_t>(w)) : config::TensorSplit::Replicated) {
    case config::TensorSplit::Columns: {
      const at::Tensor in = copyToTensorGroup(x, group, name);
      const at::Tensor out = at::linear(in, p[w], p[w + 1]);
      return adapter ? out + adapterUpdate(in, *adapter) : out;
    }
    case config::TensorSplit::Rows: {
      at::Tensor partial = at::linear(x, p[w]);
      if (adapter) partial = partial + adapterUpdate(x, *adapter);
      return reduceFromTensorGroup(partial, group, name) + p[w + 1];
    }
    default:
      return adapter ? linearWithAdapter(x, p[w], p[w + 1], adapter->a, adapter->b) : at::linear(x, p[w], p[w + 1]);
  }
}

at::Tensor MlpModel::forwardStage(int stage, const at::Tensor& input, const Batch& batch,
                                  const std::vector<at::Tensor>& p) const {
  if (stage == 0) return at::gelu(linear(input, p, 0, "inp"));
  if (stage <= numBlocks_) {
    const int w = 2 + blockParams_ * (stage - 1);
    // The name is the tensor group's collectives'; none to build without one.
    const std::string name = tensorParallel().group ? "blocks." + std::to_string(stage - 1) : "";
    if (blockParams_ == 2) return at::gelu(linear(input, p, w, name));
    // LoRA: under --tp the adapter's whole half (a column-parallel layer's A, a row-parallel one's B)
    // acts on this rank's slice only, its gradient summed over the group.
    LoraPair adapter{p[w + 2], p[w + 3]};
    if (tensorParallel().group) {
      const bool column = splitOf(static_cast<size_t>(w)) == config::TensorSplit::Columns;
      const bool split = column || splitOf(static_cast<size_t>(w)) == config::TensorSplit::Rows;
      at::Tensor& whole = column ? adapter.a : adapter.b;
      if (split) whole = sharedAcrossTensorGroup({whole}, tensorParallel(), name + " lora adapter").front();
    }
    return at::gelu(linear(input, p, w, name, &adapter));
  }
  const int w = 2 + blockParams_ * numBlocks_;
  // The loss in fp32 whatever the compute dtype (a no-op under fp32).
  return at::cross_entropy_loss(linear(input, p, w, "head").to(at::kFloat), batch.y);
}

void MlpModel::forEachFullInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const {
  // nn.Linear's default: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); LoRA's A the
  // same (as PEFT's kaiming_uniform_(a=sqrt(5)) gives), its B zero.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  auto adapterGen = loraGenerator(seed);
  for (size_t i = 0; i < fullParams().size(); ++i) {
    const auto& spec = fullParams()[i];
    const int64_t fanIn = spec.name.rfind("inp.", 0) == 0 ? features_ : hidden_;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
    if (isLoraB(spec.name))
      fn(i, at::zeros(spec.shape, at::kFloat));
    else
      fn(i, at::empty(spec.shape, at::kFloat).uniform_(-bound, bound, isLoraA(spec.name) ? adapterGen : gen));
  }
}

Batch MlpModel::globalBatch(int64_t seed, int step, int batchSize) const {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * 1000003ULL +
                                                      7919ULL * static_cast<uint64_t>(step + 1));
  Batch b;
  b.x = at::randn({batchSize, features_}, gen, at::kFloat);
  b.y = at::randint(classes_, {batchSize}, gen, at::kLong);
  return b;
}

}  // namespace shardscope::engine
