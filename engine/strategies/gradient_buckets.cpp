#include "engine/strategies/gradient_buckets.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "engine/models/model.h"
#include "engine/recording/recorder.h"
#include "engine/launch/step_gate.h"

namespace shardscope::engine {

namespace {
constexpr int64_t kFirstBucketBytes = 1024 * 1024;  // torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
}

std::vector<std::vector<int>> assignBuckets(const std::vector<int64_t>& paramBytes, int64_t firstCapBytes,
                                            int64_t capBytes) {
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

std::vector<std::vector<int>> assignUnitBuckets(const std::vector<int32_t>& units) {
  std::map<int32_t, std::vector<int>> byUnit;
  for (int i = static_cast<int>(units.size()) - 1; i >= 0; --i) byUnit[units[i]].push_back(i);
  std::vector<std::vector<int>> buckets;
  for (auto& [unit, params] : byUnit) buckets.push_back(std::move(params));
  std::sort(buckets.begin(), buckets.end(),
            [](const std::vector<int>& a, const std::vector<int>& b) { return a.back() > b.back(); });
  return buckets;
}

GradientBuckets::GradientBuckets(const std::vector<at::Tensor>& live, double bucketCapMb, Communicator& comm,
                                 StepGate* gate, const std::vector<int32_t>& unitOf)
    : live_(live), comm_(comm), gate_(gate) {
  // Buckets are sized by the gradients the model produces; parameters that do not require a
  // gradient (frozen) are left out, as the reducer leaves them out.
  std::vector<int> trained;
  std::vector<int64_t> bytes;
  std::vector<int32_t> units;
  for (size_t i = 0; i < live_.size(); ++i) {
    if (!live_[i].requires_grad()) continue;
    trained.push_back(static_cast<int>(i));
    bytes.push_back(live_[i].numel() * live_[i].element_size());
    if (!unitOf.empty()) units.push_back(unitOf.at(i));
  }
  if (trained.empty()) {
    throw std::invalid_argument("gradient buckets: no parameter requires a gradient, so there is nothing to train.");
  }
  const auto capBytes = static_cast<int64_t>(bucketCapMb * 1024.0 * 1024.0);
  // The first bucket is small so the first all-reduce starts early; never larger than the cap.
  const int64_t firstCapBytes = std::min(kFirstBucketBytes, capBytes);
  bucketOf_.assign(live_.size(), -1);
  offsetOf_.assign(live_.size(), 0);
  inSlot_.assign(live_.size(), false);
  const auto fp32 = live_.at(0).options().dtype(at::kFloat).requires_grad(false);  // reduce dtype
  for (auto& positions : unitOf.empty() ? assignBuckets(bytes, firstCapBytes, capBytes) : assignUnitBuckets(units)) {
    Bucket bucket;
    std::vector<int> indices;
    for (int k : positions) indices.push_back(trained[k]);
    int64_t offset = 0;
    for (int i : indices) {
      offsetOf_[i] = offset;
      offset += live_[i].numel();
      bucketOf_[i] = static_cast<int>(buckets_.size());
    }
    bucket.label = unitOf.empty() ? "bucket " + std::to_string(buckets_.size())
                                  : StagedModel::unitName(unitOf.at(indices.front()));
    bucket.params = std::move(indices);
    bucket.pending = static_cast<int>(bucket.params.size());
    RoleScope role(trace::MemoryRole::CommBuffer);
    bucket.buffer = at::zeros({offset}, fp32);
    buckets_.push_back(std::move(bucket));
  }
  // Like the reducer: hook the grad accumulator (not the tensor) so the hook runs after the
  // gradient has been accumulated into .grad, once per parameter per backward.
  for (int index : trained) {
    auto accumulator = torch::autograd::impl::grad_accumulator(live_[index]);
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, index](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          onGradReady(index);
          return outputs;
        }));
    gradAccumulators_.push_back(std::move(accumulator));
  }
}

std::vector<std::vector<int>> GradientBuckets::layout() const {
  std::vector<std::vector<int>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

at::Tensor GradientBuckets::slotOf(int param) {
  return buckets_[bucketOf_[param]].buffer.narrow(0, offsetOf_[param], live_[param].numel());
}

void GradientBuckets::accumulateInSlot(int param) {
  at::Tensor& grad = live_[param].mutable_grad();
  const at::Tensor flat = grad.reshape({-1});
  if (inSlot_[param]) {
    slotOf(param).add_(flat);
  } else {
    slotOf(param).copy_(flat);
  }
  inSlot_[param] = true;
  grad = at::Tensor();  // the next micro-batch's gradient starts afresh; the sum is in the slot
}

void GradientBuckets::onGradReady(int param) {
  if (!enabled_) {
    if (live_[param].scalar_type() != at::kFloat) accumulateInSlot(param);
    return;
  }
  Bucket& bucket = buckets_[bucketOf_[param]];
  if (--bucket.pending == 0) launchReadyBuckets();
}

// On the host, a bucket whose gradients are all fp32 and none summed in its slot already (bf16
// micro-batches) is divided as it is filled. Not on a GPU, where one launch per parameter costs
// more than the pass it saves, nor for bf16 gradients, whose product would round in bf16 first.
bool GradientBuckets::dividesWhileCopying(const Bucket& bucket, const std::vector<at::Tensor>& grads,
                                          const std::vector<at::Tensor>& partialSlots) {
  if (!bucket.buffer.is_cpu() || !partialSlots.empty()) return false;
  for (const auto& g : grads) {
    if (g.scalar_type() != at::kFloat) return false;
  }
  return true;
}

void GradientBuckets::launchReadyBuckets() {
  const double scale = 1.0 / comm_.worldSize();
  while (nextToLaunch_ < static_cast<int>(buckets_.size()) && buckets_[nextToLaunch_].pending == 0) {
    const int index = nextToLaunch_++;
    const std::string& label = buckets_[index].label;
    if (gate_) gate_->enter(trace::GroupKind::Collective, "all_reduce " + label);  // before it is packed
    Bucket& b = buckets_[index];
    std::vector<at::Tensor> slots, grads, partialSlots, lastGrads;
    for (const int i : b.params) {
      const auto& g = live_[i].grad();
      // With micro-batches summed in the slot (bf16 gradients), the last one is added to them.
      auto& to = inSlot_[i] ? partialSlots : slots;
      auto& from = inSlot_[i] ? lastGrads : grads;
      to.push_back(slotOf(i));
      from.push_back(g.reshape({-1}));
      inSlot_[i] = false;
    }
    // Pre-divide, then sum: the average that DDP's default allreduce hook computes.
    if (dividesWhileCopying(b, grads, partialSlots)) {
      // As the reducer does (its mul_out): each fp32 gradient divided on its way into the bucket,
      // one pass over it instead of a copy and then a pass over the whole bucket; the same product.
      for (size_t k = 0; k < slots.size(); ++k) at::mul_out(slots[k], grads[k], scale);
    } else {
      // One multi-tensor launch per bucket on CUDA (casting bf16 gradients to fp32 on the way), not
      // one per parameter: the reducer's per-parameter copies are launch-bound on a GPU that is fast.
      if (!slots.empty()) at::_foreach_copy_(slots, grads);
      if (!partialSlots.empty()) at::_foreach_add_(partialSlots, lastGrads);
      b.buffer.mul_(scale);
    }
    b.work = comm_.allReduceSumAsync(b.buffer, label);
  }
}

void GradientBuckets::finish(const std::function<void(int, const at::Tensor&)>& take) {
  if (nextToLaunch_ != static_cast<int>(buckets_.size())) {
    throw std::runtime_error(
        "gradient buckets (ddp, zero1): some parameters received no gradient this step, so their "
        "bucket never became ready (PyTorch's DDP would need find_unused_parameters=True).");
  }
  for (auto& b : buckets_) {
    b.work->wait();
    b.work.reset();
    for (const int i : b.params) take(i, slotOf(i));
    b.pending = static_cast<int>(b.params.size());
  }
  nextToLaunch_ = 0;
}

std::vector<HeldTensor> GradientBuckets::heldTensors() const {
  std::vector<HeldTensor> out;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    out.push_back({"bucket." + std::to_string(b), trace::MemoryRole::CommBuffer, buckets_[b].buffer.numel(),
                   static_cast<int64_t>(buckets_[b].buffer.storage().nbytes())});
  }
  return out;
}

}  // namespace shardscope::engine
