#include "engine/strategies/ddp_strategy.h"

#include "engine/strategies/optimizer_factory.h"
#include "engine/recording/recorder.h"

namespace shardscope::engine {

DdpStrategy::DdpStrategy(const config::RunConfig& config, const StagedModel& model, Communicator& comm,
                         const at::Device& device, StepGate& gate)
    : Strategy(gate), model_(model) {
  const bool bf16 = config.precision == config::Precision::Bf16;
  {
    // Initial values (identical on every rank) pass through once, one parameter at a time.
    RoleScope initRole(trace::MemoryRole::Other);
    at::NoGradGuard noGrad;
    // Frozen parameters (LoRA's base weights) are never stepped, so under bf16 they need no fp32
    // master: each is held once, in bf16, and the model computes with it directly.
    model.forEachInitialParameter(config.seed, [&](size_t i, at::Tensor value) {
      const bool trainable = model.params()[i].trainable;
      // Cast on the host first (still `other`): a cast on the way to a GPU goes through a host copy.
      const at::Tensor cast = value.to(bf16 && !trainable ? at::kBFloat16 : at::kFloat);
      RoleScope role(trace::MemoryRole::ParamShard);  // ddp's "shard" is the full replica
      UnitScope memoryOf(model.params()[i].unit);
      params_.push_back(cast.to(device, cast.scalar_type(), false, /*copy=*/true).set_requires_grad(trainable));
    });
  }
  if (bf16) {
    RoleScope role(trace::MemoryRole::ParamGathered);  // parameters as the model computes with them
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& p = params_[i];
      UnitScope memoryOf(model.params()[i].unit);
      compute_.push_back(p.requires_grad() ? p.detach().to(at::kBFloat16).set_requires_grad(true) : p);
    }
  }
  // Frozen parameters (LoRA's base weights) get no bucket and no optimizer state. no_shard: a
  // bucket per unit, FSDP1 NO_SHARD's all-reduce of each unit's gradient after its backward.
  std::vector<int32_t> unitOf;
  if (!config::traitsOf(config.strategy).reducesInBuckets) {
    for (const auto& spec : model.params()) unitOf.push_back(spec.unit);
  }
  // A pipeline stage with one data rank has nothing to average: no buckets and no all-reduce, as
  // torchtitan applies no data parallelism there. Under bf16 the buckets stay: they add the
  // micro-batches' gradients up in fp32.
  const bool averagesNothing = config.pp > 1 && comm.worldSize() == 1 && !bf16;
  if (!averagesNothing) {
    buckets_ = std::make_unique<GradientBuckets>(liveParameters(), config.bucketCapMb, comm, &gate, unitOf);
  }
  std::vector<at::Tensor> trained;
  for (const auto& p : params_) {
    if (p.requires_grad()) trained.push_back(p);
  }
  optimizer_ = makeOptimizer(config, trained);
}

DdpStrategy::~DdpStrategy() = default;

void DdpStrategy::finishBackward() {
  if (!buckets_) return;  // the gradients are in .grad, as the backward left them
  std::vector<at::Tensor> grads, averages;
  buckets_->finish([&](int i, const at::Tensor& averaged) {
    auto& p = params_[i];
    if (!compute_.empty()) {
      compute_[i].mutable_grad() = at::Tensor();  // the bf16 gradient is in the bucket now
      if (!p.grad().defined()) {
        RoleScope role(trace::MemoryRole::GradFull);
        UnitScope memoryOf(model_.params()[i].unit);
        p.mutable_grad() = at::empty_like(p);
      }
    }
    grads.push_back(p.mutable_grad().view({-1}));
    averages.push_back(averaged);
  });
  at::_foreach_copy_(grads, averages);  // one multi-tensor launch on CUDA, not one per parameter
}

void DdpStrategy::step() {
  optimizer_->step();
  if (!optimizerStateAssigned_) {
    std::vector<int32_t> units;
    for (const auto& spec : model_.params()) units.push_back(spec.unit);
    assignOptimizerStateToUnits(*optimizer_, params_, units);
    optimizerStateAssigned_ = true;
  }
  optimizer_->zero_grad(/*set_to_none=*/true);
  refreshComputeCopies();
}

void DdpStrategy::refreshComputeCopies() {
  at::NoGradGuard noGrad;
  if (compute_.empty()) return;
  // Only what the step changed: frozen parameters (LoRA's base) keep the copies made at the start.
  std::vector<at::Tensor> copies, masters;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;
    copies.push_back(compute_[i]);
    masters.push_back(params_[i]);
  }
  at::_foreach_copy_(copies, masters);  // one multi-tensor launch on CUDA, not one per parameter
}

std::map<std::string, at::Tensor> DdpStrategy::fullParameters() {
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out[model_.params()[i].name] = params_[i].detach().to(at::kCPU, at::kFloat, false, /*copy=*/true);
  }
  return out;
}

std::vector<HeldTensor> DdpStrategy::heldTensors() const {
  std::vector<HeldTensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    // Replicated full parameters: DDP's "shard" is the whole tensor.
    out.push_back({model_.params()[i].name, trace::MemoryRole::ParamShard, p.numel(),
                   static_cast<int64_t>(p.storage().nbytes())});
    if (p.grad().defined()) {
      out.push_back({model_.params()[i].name + ".grad", trace::MemoryRole::GradFull, p.grad().numel(),
                     static_cast<int64_t>(p.grad().storage().nbytes())});
    }
  }
  for (size_t i = 0; i < compute_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;  // a frozen parameter is its own compute copy
    out.push_back({model_.params()[i].name + ".bf16", trace::MemoryRole::ParamGathered, compute_[i].numel(),
                   static_cast<int64_t>(compute_[i].storage().nbytes())});
  }
  if (buckets_) append(out, buckets_->heldTensors());
  append(out, optimizerStateTensors(*optimizer_));
  return out;
}

}  // namespace shardscope::engine
