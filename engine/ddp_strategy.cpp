#include "engine/ddp_strategy.h"

#include <stdexcept>

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "engine/optimizer_factory.h"
#include "engine/recorder.h"

namespace shardscope {

namespace {
constexpr int64_t kFirstBucketBytes = 1024 * 1024;  // torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
}

std::vector<std::vector<int>> assignBuckets(const std::vector<int64_t>& paramBytes,
                                            int64_t firstCapBytes, int64_t capBytes) {
  std::vector<std::vector<int>> buckets;
  std::vector<int> current;
  int64_t size = 0;
  for (int i = static_cast<int>(paramBytes.size()) - 1; i >= 0; --i) {
    current.push_back(i);
    size += paramBytes[i];
    const int64_t cap = buckets.empty() ? firstCapBytes : capBytes;
    if (size >= cap) {
      buckets.push_back(std::move(current));
      current.clear();
      size = 0;
    }
  }
  if (!current.empty()) buckets.push_back(std::move(current));
  return buckets;
}

DdpStrategy::DdpStrategy(const RunConfig& config, const StagedModel& model, Communicator& comm,
                         const at::Device& device)
    : model_(model), comm_(comm) {
  {
    RoleScope role(trace::MemoryRole::ParamShard);  // ddp's "shard" is the full replica
    for (auto& t : model.initParameters(config.seed)) {
      params_.push_back(t.to(device).set_requires_grad(true));
    }
  }
  if (config.precision == "bf16") {
    RoleScope role(trace::MemoryRole::ParamGathered);  // parameters as the model computes with them
    for (const auto& p : params_) {
      compute_.push_back(p.detach().to(at::kBFloat16).set_requires_grad(true));
    }
  }
  const auto& live = liveParameters();
  std::vector<int64_t> bytes;  // buckets are sized by the gradients the model produces
  for (const auto& p : live) bytes.push_back(p.numel() * p.element_size());
  const auto capBytes = static_cast<int64_t>(config.bucketCapMb * 1024.0 * 1024.0);
  // The first bucket is small so the first all-reduce starts early; never larger than the cap.
  const int64_t firstCapBytes = std::min(kFirstBucketBytes, capBytes);
  bucketOf_.assign(params_.size(), -1);
  for (auto& indices : assignBuckets(bytes, firstCapBytes, capBytes)) {
    Bucket bucket;
    int64_t offset = 0;
    for (int i : indices) {
      bucket.offsets.push_back(offset);
      offset += params_[i].numel();
      bucketOf_[i] = static_cast<int>(buckets_.size());
    }
    bucket.params = std::move(indices);
    RoleScope role(trace::MemoryRole::CommBuffer);
    bucket.buffer = at::zeros({offset}, params_[0].options().requires_grad(false));  // fp32: reduce dtype
    buckets_.push_back(std::move(bucket));
  }
  // Like the reducer: hook the grad accumulator (not the tensor) so the hook runs after the
  // gradient has been accumulated into .grad, once per parameter per backward.
  for (size_t i = 0; i < live.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(live[i]);
    const int index = static_cast<int>(i);
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, index](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
          onGradReady(index);
          return outputs;
        }));
    gradAccumulators_.push_back(std::move(accumulator));
  }
  for (auto& b : buckets_) b.pending = static_cast<int>(b.params.size());
  optimizer_ = makeOptimizer(config, params_);
}

DdpStrategy::~DdpStrategy() = default;

std::vector<std::vector<int>> DdpStrategy::bucketLayout() const {
  std::vector<std::vector<int>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

void DdpStrategy::onGradReady(int param) {
  Bucket& bucket = buckets_[bucketOf_[param]];
  if (--bucket.pending == 0) launchReadyBuckets();
}

void DdpStrategy::launchReadyBuckets() {
  const double scale = 1.0 / comm_.worldSize();
  while (nextToLaunch_ < static_cast<int>(buckets_.size()) &&
         buckets_[nextToLaunch_].pending == 0) {
    const int index = nextToLaunch_++;
    Bucket& b = buckets_[index];
    for (size_t k = 0; k < b.params.size(); ++k) {
      const auto& g = liveParameters()[b.params[k]].grad();
      b.buffer.narrow(0, b.offsets[k], g.numel()).copy_(g.reshape({-1}));
    }
    // Pre-divide, then sum: the average that DDP's default allreduce hook computes.
    b.buffer.mul_(scale);
    b.work = comm_.allReduceSumAsync(b.buffer, "bucket " + std::to_string(index));
  }
}

void DdpStrategy::finishBackward() {
  if (nextToLaunch_ != static_cast<int>(buckets_.size())) {
    throw std::runtime_error(
        "DDP: some parameters received no gradient this step, so their bucket never became ready "
        "(PyTorch would need find_unused_parameters=True).");
  }
  for (auto& b : buckets_) {
    b.work->wait();
    b.work.reset();
    for (size_t k = 0; k < b.params.size(); ++k) {
      const int i = b.params[k];
      auto& p = params_[i];
      if (!compute_.empty()) {
        compute_[i].mutable_grad() = at::Tensor();  // the bf16 gradient is in the bucket now
        if (!p.grad().defined()) {
          RoleScope role(trace::MemoryRole::GradFull);
          p.mutable_grad() = at::empty_like(p);
        }
      }
      p.mutable_grad().view({-1}).copy_(b.buffer.narrow(0, b.offsets[k], p.numel()));
    }
    b.pending = static_cast<int>(b.params.size());
  }
  nextToLaunch_ = 0;
}

void DdpStrategy::step() {
  optimizer_->step();
  optimizer_->zero_grad(/*set_to_none=*/true);
  refreshComputeCopies();
}

void DdpStrategy::refreshComputeCopies() {
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < compute_.size(); ++i) compute_[i].copy_(params_[i]);
}

std::map<std::string, at::Tensor> DdpStrategy::fullParameters() {
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out[model_.params()[i].name] = params_[i].detach().to(at::kCPU).clone();
  }
  return out;
}

std::vector<HeldTensor> DdpStrategy::heldTensors() const {
  std::vector<HeldTensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    // Replicated full parameters: DDP's "shard" is the whole tensor.
    out.push_back({model_.params()[i].name, "param_shard", p.numel(),
                   static_cast<int64_t>(p.storage().nbytes())});
    if (p.grad().defined()) {
      out.push_back({model_.params()[i].name + ".grad", "grad_full", p.grad().numel(),
                     static_cast<int64_t>(p.grad().storage().nbytes())});
    }
  }
  for (size_t i = 0; i < compute_.size(); ++i) {
    out.push_back({model_.params()[i].name + ".bf16", "param_gathered", compute_[i].numel(),
                   static_cast<int64_t>(compute_[i].storage().nbytes())});
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    out.push_back({"bucket." + std::to_string(b), "comm_buffer", buckets_[b].buffer.numel(),
                   static_cast<int64_t>(buckets_[b].buffer.storage().nbytes())});
  }
  auto state = optimizerStateTensors(*optimizer_);
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

}  // namespace shardscope
