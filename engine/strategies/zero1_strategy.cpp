#include "engine/strategies/zero1_strategy.h"

#include <algorithm>

#include "engine/strategies/optimizer_factory.h"
#include "engine/recording/recorder.h"
#include "engine/launch/step_gate.h"

namespace shardscope::engine {

Zero1Strategy::Zero1Strategy(const config::RunConfig& config, const StagedModel& model, Communicator& comm,
                             const at::Device& device, StepGate& gate)
    : Strategy(gate), model_(model), comm_(comm) {
  const bool bf16 = config.precision == config::Precision::Bf16;
  const int64_t world = comm.worldSize();
  // Only trained parameters are flattened and partitioned, as ZeroRedundancyOptimizer is handed
  // only those; frozen ones (LoRA's base weights) are held whole, as DDP holds them.
  int64_t total = 0;
  for (const auto& spec : model.params()) {
    flatOffsets_.push_back(spec.trainable ? total : -1);
    total += spec.trainable ? spec.numel() : 0;
  }
  flatNumel_ = total;
  sliceNumel_ = (total + world - 1) / world;
  const auto options = at::TensorOptions().device(device).dtype(bf16 ? at::kBFloat16 : at::kFloat);
  {
    // fp32: the full replica, as DDP holds it. bf16: the compute copy, refilled by all-gather.
    RoleScope role(bf16 ? trace::MemoryRole::ParamGathered : trace::MemoryRole::ParamShard);
    flat_ = at::zeros({sliceNumel_ * world}, options);
  }
  if (bf16) {
    RoleScope role(trace::MemoryRole::ParamShard);
    master_ = at::zeros({sliceNumel_}, options.dtype(at::kFloat));
  }
  {
    // Initial values (identical on every rank) pass through once, one parameter at a time. Under
    // bf16 the master slice takes them as they are, not their bf16 rounding.
    RoleScope role(trace::MemoryRole::Other);
    at::NoGradGuard noGrad;
    model.forEachInitialParameter(config.seed, [&](size_t i, at::Tensor value) {
      if (flatOffsets_[i] >= 0) {
        flat_.narrow(0, flatOffsets_[i], value.numel()).copy_(value.reshape({-1}));
        if (bf16) copyOwnedPart(master_, static_cast<int>(i), value.reshape({-1}));
        return;
      }
      // A copy: `value` is the init's (other). Never stepped, so under bf16 it needs no fp32
      // master: held once, in bf16, and the model computes with it directly.
      // Cast on the host first (still `other`): a cast on the way to a GPU goes through a host copy.
      const at::Tensor cast = value.to(bf16 ? at::kBFloat16 : at::kFloat);
      RoleScope frozenRole(trace::MemoryRole::ParamShard);
      UnitScope memoryOf(model.params()[i].unit);  // held whole, per parameter: its unit's
      frozen_[i] = cast.to(device, cast.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    });
  }
  for (size_t i = 0; i < model.params().size(); ++i) {
    const auto& spec = model.params()[i];
    if (flatOffsets_[i] >= 0) {
      params_.push_back(
          flat_.narrow(0, flatOffsets_[i], spec.numel()).view(spec.shape).detach().set_requires_grad(true));
    } else {
      params_.push_back(frozen_[i]);
    }
  }
  if (!bf16) master_ = ownedSliceOf(flat_).detach();
  segments_ = segmentsOfSlice();
  for (const auto& [begin, end] : segments_) {
    masterSegments_.push_back(master_.narrow(0, begin, end - begin).detach().set_requires_grad(true));
  }
  buckets_ = std::make_unique<GradientBuckets>(params_, config.bucketCapMb, comm, &gate);
  optimizer_ = makeOptimizer(config, masterSegments_);
}

std::vector<std::pair<int64_t, int64_t>> Zero1Strategy::segmentsOfSlice() const {
  const int64_t begin = comm_.rank() * sliceNumel_;
  std::vector<int64_t> cuts = {0, sliceNumel_};
  for (int64_t boundary : flatOffsets_) {
    if (boundary >= 0) cuts.push_back(boundary - begin);
  }
  cuts.push_back(flatNumel_ - begin);
  std::vector<int64_t> inside;
  for (int64_t c : cuts) {
    if (c >= 0 && c <= sliceNumel_) inside.push_back(c);
  }
  std::sort(inside.begin(), inside.end());
  inside.erase(std::unique(inside.begin(), inside.end()), inside.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t k = 0; k + 1 < inside.size(); ++k) out.emplace_back(inside[k], inside[k + 1]);
  return out;
}

Zero1Strategy::~Zero1Strategy() = default;

at::Tensor Zero1Strategy::ownedSliceOf(const at::Tensor& flat) const {
  return flat.narrow(0, comm_.rank() * sliceNumel_, sliceNumel_);
}

void Zero1Strategy::copyOwnedPart(at::Tensor& slice, int i, const at::Tensor& values) const {
  const int64_t begin = comm_.rank() * sliceNumel_;
  const int64_t a = std::max(begin, flatOffsets_[i]);
  const int64_t b = std::min(begin + sliceNumel_, flatOffsets_[i] + values.numel());
  if (a < b) slice.narrow(0, a - begin, b - a).copy_(values.narrow(0, a - flatOffsets_[i], b - a));
}

void Zero1Strategy::finishBackward() {
  if (!masterGrad_.defined()) {
    RoleScope role(trace::MemoryRole::GradShard);
    masterGrad_ = at::zeros({sliceNumel_}, master_.options().requires_grad(false));  // padding stays 0
  }
  buckets_->finish([&](int i, const at::Tensor& averaged) {
    // Keep the part of the averaged gradient that falls in this rank's slice; drop the rest.
    copyOwnedPart(masterGrad_, i, averaged);
    params_[i].mutable_grad() = at::Tensor();
  });
}

void Zero1Strategy::step() {
  for (size_t k = 0; k < segments_.size(); ++k) {
    const auto [begin, end] = segments_[k];
    masterSegments_[k].mutable_grad() = masterGrad_.narrow(0, begin, end - begin);
  }
  optimizer_->step();
  for (auto& segment : masterSegments_) segment.mutable_grad() = at::Tensor();
  masterGrad_ = at::Tensor();  // zero_grad(set_to_none=True)
  at::NoGradGuard noGrad;
  gate().enter(trace::GroupKind::Collective, "all_gather params (zero1)");
  at::Tensor owned = ownedSliceOf(flat_);
  if (master_.scalar_type() != flat_.scalar_type()) owned.copy_(master_.detach());
  // Every rank updated its own slice; one all-gather, in place, gives everyone all of them.
  comm_.allGather(flat_, owned, "params (zero1)");
}

std::map<std::string, at::Tensor> Zero1Strategy::fullParameters() {
  // The fp32 values: under bf16 the masters are gathered, not the bf16 copies.
  at::Tensor full = flat_;
  if (master_.scalar_type() != flat_.scalar_type()) {
    full = at::empty({flat_.numel()}, master_.options().requires_grad(false));
    at::Tensor master = master_.detach();
    comm_.allGather(full, master, "params (export)");
  }
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& spec = model_.params()[i];
    out[spec.name] = flatOffsets_[i] < 0
                         ? frozen_.at(i).to(at::kCPU, at::kFloat, false, /*copy=*/true)
                         : full.narrow(0, flatOffsets_[i], spec.numel()).view(spec.shape).to(at::kCPU).clone();
  }
  return out;
}

std::vector<HeldTensor> Zero1Strategy::heldTensors() const {
  auto bytesOf = [](const at::Tensor& t) { return static_cast<int64_t>(t.storage().nbytes()); };
  const bool bf16 = master_.scalar_type() != flat_.scalar_type();
  std::vector<HeldTensor> out;
  out.push_back({"params (flat)", bf16 ? trace::MemoryRole::ParamGathered : trace::MemoryRole::ParamShard,
                 flat_.numel(), bytesOf(flat_)});
  if (bf16) out.push_back({"master slice", trace::MemoryRole::ParamShard, master_.numel(), bytesOf(master_)});
  if (masterGrad_.defined())
    out.push_back({"master slice.grad", trace::MemoryRole::GradShard, masterGrad_.numel(), bytesOf(masterGrad_)});
  for (const auto& [i, t] : frozen_) {
    out.push_back({model_.params()[i].name + " (frozen)", trace::MemoryRole::ParamShard, t.numel(), bytesOf(t)});
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].grad();
    if (g.defined())
      out.push_back({model_.params()[i].name + ".grad", trace::MemoryRole::GradFull, g.numel(), bytesOf(g)});
  }
  append(out, buckets_->heldTensors());
  append(out, optimizerStateTensors(*optimizer_));
  return out;
}

}  // namespace shardscope::engine
