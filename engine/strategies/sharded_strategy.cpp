#include "engine/strategies/sharded_strategy.h"

#include <algorithm>
#include <optional>

#include <torch/optim.h>

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/strides.h>

#include "engine/strategies/optimizer_factory.h"
#include "engine/recording/recorder.h"
#include "engine/recording/recording_allocator.h"
#include "engine/launch/step_gate.h"
#include "engine/strategies/storage_resize.h"

namespace shardscope::engine {

ShardedStrategy::ShardedStrategy(const config::RunConfig& config, const StagedModel& model, const ProcessMesh& mesh,
                                 const at::Device& device, bool reshardAfterForward, StepGate& gate)
    : Strategy(gate),
      model_(model),
      comm_(mesh.shard()),
      replicate_(mesh.replicate()),
      dataParallelRanks_(mesh.data().worldSize()),
      reshardAfterForward_(reshardAfterForward),
      prefetchDepth_(config.prefetch),
      computeDtype_(config.precision == config::Precision::Bf16 ? at::kBFloat16 : at::kFloat),
      device_(device),
      offload_(config.offload == config::Offload::Cpu) {
  const int shardRanks = comm_.worldSize();  // the world, or under HSDP the shard group
  const int rank = comm_.rank();
  const auto& specs = model.params();
  // The units of config/model_layout.h's flatUnits(): per block and the root, frozen and trained
  // parameters apart. slotUnits_ groups them by block (the root's last) for the stage hooks.
  slotUnits_.resize(model.numUnits() + 1);
  std::vector<int> unitOfParam(specs.size(), -1);
  for (const config::FlatUnit& flat : config::flatUnits(specs, model.numUnits())) {
    Unit unit;
    unit.name = flat.name;
    unit.modelUnit = flat.unit;
    unit.trainable = flat.trainable;
    unit.params = flat.params;
    for (int i : flat.params) {
      unit.offsets.push_back(unit.numel);
      unit.numel += specs[i].numel();
      unitOfParam[i] = static_cast<int>(units_.size());
    }
    unit.paddedNumel = (unit.numel + shardRanks - 1) / shardRanks * shardRanks;
    slotUnits_[flat.unit == config::kRootUnit ? model.numUnits() : flat.unit].push_back(
        static_cast<int>(units_.size()));
    units_.push_back(std::move(unit));
  }

  // Every rank generates the same initial values, one parameter at a time, copies each into its
  // unit's flat fp32 buffer and, once a unit is complete, keeps only its slice. So the full values
  // (role other) of one block exist at once, and the root's from its first parameter to its last
  // (GPT: embeddings first, head last), as FSDP2 materialises one module's parameters at a time.
  live_.resize(specs.size());
  accumulated_.resize(specs.size());
  std::vector<at::Tensor> filling(units_.size());
  std::vector<size_t> filled(units_.size(), 0);
  {
    RoleScope initRole(trace::MemoryRole::Other);
    model.forEachInitialParameter(config.seed, [&](size_t i, at::Tensor value) {
      const int u = unitOfParam[i];
      Unit& unit = units_[u];
      if (!filling[u].defined()) filling[u] = at::zeros({unit.paddedNumel}, at::kFloat);  // padding 0
      const size_t k = std::find(unit.params.begin(), unit.params.end(), static_cast<int>(i)) - unit.params.begin();
      filling[u].narrow(0, unit.offsets[k], value.numel()).copy_(value.reshape({-1}));
      if (++filled[u] == unit.params.size()) {
        buildUnit(unit, filling[u], shardRanks, rank, device);
        filling[u] = at::Tensor();
      }
    });
  }
  std::vector<at::Tensor> optimized;
  for (Unit& unit : units_) {
    if (unit.trainable) optimized.push_back(unit.shard);
  }
  optimizer_ = makeOptimizer(config, optimized);
}

void ShardedStrategy::buildUnit(Unit& unit, const at::Tensor& flat, int shardRanks, int rank,
                                const at::Device& device) {
  UnitScope memoryOf(unit.modelUnit);
  const auto& specs = model_.params();
  const auto floatOptions = at::TensorOptions().dtype(at::kFloat).device(device);
  const int64_t shardNumel = unit.paddedNumel / shardRanks;
  {
    // A frozen unit (LoRA's base weights) is never stepped, so under bf16 its shard needs no fp32
    // master: it is held in bf16 and all-gathered as it is, as FSDP2 does for a base model loaded
    // in bf16. Cast on the host, still in the caller's role (`other`): a cast on the way to a GPU
    // goes through a host copy.
    const at::Tensor slice =
        flat.narrow(0, rank * shardNumel, shardNumel).to(unit.trainable ? at::kFloat : computeDtype_);
    RoleScope role(trace::MemoryRole::ParamShard);
    if (offload_) {
      unit.shard = emptyHostTensor({shardNumel}, slice.scalar_type(), /*pinned=*/device.is_cuda(), unit.name);
      unit.shard.copy_(slice);
    } else {
      unit.shard = slice.to(device, slice.scalar_type(), false, /*copy=*/true);  // one copy, on the device
    }
    unit.shard.set_requires_grad(unit.trainable);
  }
  RoleScope gatheredRole(trace::MemoryRole::ParamGathered);
  const auto computeOptions = floatOptions.dtype(computeDtype_);
  unit.gathered = at::empty({unit.paddedNumel}, computeOptions);
  for (size_t k = 0; k < unit.params.size(); ++k) {
    const int i = unit.params[k];
    // A fresh tensor set onto the gathered storage (FSDP2 hides its copy-in from autograd the same
    // way). See Note [freeing gathered parameters] in storage_resize.h.
    at::Tensor view = at::empty({0}, computeOptions);
    {
      at::NoGradGuard noGrad;
      view.set_(unit.gathered.storage(), unit.offsets[k], specs[i].shape, c10::contiguous_strides(specs[i].shape));
    }
    live_[i] = view.set_requires_grad(unit.trainable);
  }
  setStorageBytes(unit.gathered, 0);  // views exist now; the unit starts sharded (Note [freeing gathered parameters])
}

ShardedStrategy::~ShardedStrategy() = default;

template <typename Fn>
auto ShardedStrategy::allocateForCollective(Fn&& allocate) {
  // Buffers collectives touch and the step frees come from the communication stream's pool. Only
  // allocation happens here; kernels stay on the caller's stream.
  // See Note [freeing collective buffers] in engine/comm/collective_stream.h.
  const auto stream = comm_.collectiveStream();
  if (!stream) return allocate();
  c10::StreamGuard onComm(*stream);
  return allocate();
}

const std::vector<int>& ShardedStrategy::unitsOfStage(int stage) const {
  const int unit = model_.stageUnit(stage);
  return slotUnits_[unit == config::kRootUnit ? model_.numUnits() : unit];
}

void ShardedStrategy::issueUnshard(Unit& unit) {
  if (unit.state != UnitState::Sharded) return;
  gate().enter(trace::GroupKind::Collective, "all_gather " + unit.name);  // before its buffer exists
  UnitScope memoryOf(unit.modelUnit);
  {
    RoleScope role(trace::MemoryRole::ParamGathered);
    allocateForCollective([&] {
      setStorageBytes(unit.gathered, unit.paddedNumel * unit.gathered.element_size());
      return 0;
    });
  }
  if (offload_) {
    unit.gatherInput = copyShardToDevice(unit);
  } else if (unit.shard.scalar_type() == computeDtype_) {
    unit.gatherInput = unit.shard.detach();
  } else {
    // In place, as FSDP2 does: the bf16 copy of this rank's shard goes straight into its own slice
    // of the gathered buffer, and the all-gather fills in the others around it. No send buffer.
    const int64_t shardNumel = unit.shard.numel();
    unit.gatherInput = unit.gathered.narrow(0, comm_.rank() * shardNumel, shardNumel);
    unit.gatherInput.copy_(unit.shard.detach());
  }
  unit.gather = comm_.allGatherAsync(unit.gathered, unit.gatherInput, unit.name);
  unit.state = UnitState::Unsharding;
}

template <typename Fn>
void ShardedStrategy::onCommunicationStream(PendingCollective* after, Fn&& copy) {
  const auto stream = comm_.collectiveStream();
  if (!stream) {
    copy();
    return;
  }
  if (!after) {
    c10::impl::VirtualGuardImpl guard(stream->device_type());
    c10::Event ready(stream->device_type());
    ready.record(guard.getStream(stream->device()));
    ready.block(*stream);
  }
  c10::StreamGuard onComm(*stream);
  if (after) after->wait();  // orders the current stream, the communication stream here, after it
  copy();
}

at::Tensor ShardedStrategy::copyShardToDevice(Unit& unit) {
  const at::Tensor host = unit.shard.detach();
  const int64_t shardNumel = host.numel();
  at::Tensor input;
  onCommunicationStream(nullptr, [&] {
    ComputeSpan span(gate().recorder(), trace::ComputeKind::CopyToDevice, unit.name);
    at::Tensor onDevice;
    {
      RoleScope role(trace::MemoryRole::ParamShard);  // the shard itself, brought in for its gather
      onDevice = at::empty({shardNumel}, host.options().device(device_).pinned_memory(false));
      onDevice.copy_(host, /*non_blocking=*/true);
    }
    if (onDevice.scalar_type() == computeDtype_) {
      input = onDevice;
      return;
    }
    // Cast into this rank's slice of the gathered buffer, as without offload; the fp32 copy is
    // freed here, on the stream that used it.
    input = unit.gathered.narrow(0, comm_.rank() * shardNumel, shardNumel);
    input.copy_(onDevice);
  });
  return input;
}

void ShardedStrategy::copyGradientToHost(Unit& unit, PendingCollective& reduction) {
  UnitScope memoryOf(unit.modelUnit);
  if (!unit.hostGradShard.defined()) {
    RoleScope role(trace::MemoryRole::GradShard);
    unit.hostGradShard = emptyHostTensor({unit.gradShard.numel()}, at::kFloat, /*pinned=*/device_.is_cuda(), unit.name);
  }
  // After the reduction that wrote the shard, not after the compute queued since: the copy reads
  // a buffer of the communication stream's own and writes host memory, so no device memory is
  // reused under it, and it overlaps the backward that follows, as FSDP2's copy on its
  // reduce-scatter stream does.
  onCommunicationStream(&reduction, [&] {
    ComputeSpan span(gate().recorder(), trace::ComputeKind::CopyToHost, unit.name);
    unit.hostGradShard.copy_(unit.gradShard, /*non_blocking=*/true);
    // Allocated on this stream and last used on it: free once the copy is queued
    // (Note [freeing collective buffers]).
    unit.gradShard = at::Tensor();
  });
}

void ShardedStrategy::unshard(Unit& unit) {
  issueUnshard(unit);
  if (unit.state != UnitState::Unsharding) return;
  unit.gather->wait();
  unit.gather.reset();
  unit.gatherInput = at::Tensor();
  unit.state = UnitState::Unsharded;
}

void ShardedStrategy::prefetch(int stage, int direction) {
  for (int k = 1; k <= prefetchDepth_; ++k) {
    const int next = stage + direction * k;
    if (next < 0 || next >= model_.numStages()) return;
    for (int u : unitsOfStage(next)) issueUnshard(units_[u]);
  }
}

void ShardedStrategy::reshard(Unit& unit) {
  if (unit.state == UnitState::Sharded) return;
  if (unit.state == UnitState::Unsharding) unshard(unit);  // never free a buffer an all-gather is still writing
  gate().enter(trace::GroupKind::Reshard, "reshard " + unit.name);
  // See Note [freeing gathered parameters] in storage_resize.h.
  setStorageBytes(unit.gathered, 0);
  unit.state = UnitState::Sharded;
}

void ShardedStrategy::reduceGradients(Unit& unit) {
  // FSDP2's foreach_reduce: copy the unsharded grads into one padded flat buffer, pre-divide by the
  // world size and reduce-scatter, so each rank receives the averaged gradient of its own slice
  // (on a hybrid mesh, summed over its shard group; the replicate group's all-reduce adds the rest).
  // One reduce-scatter in flight: the previous unit's is waited for (and its buffer released)
  // before this one is issued, as FSDP2 does.
  waitForReduceScatter();
  gate().enter(trace::GroupKind::Collective, "reduce_scatter " + unit.name);  // before its buffers exist
  UnitScope memoryOf(unit.modelUnit);
  at::Tensor flat;
  {
    RoleScope role(trace::MemoryRole::CommBuffer);
    // On the device, where the shard is not under --offload cpu. fp32: the reduce dtype.
    const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(device_);
    flat = allocateForCollective([&] { return at::empty({unit.paddedNumel}, fp32); });
    flat.zero_();
  }
  if (!unit.gradShard.defined()) {
    // Allocated when first reduced into and freed after the optimizer step, like .grad under
    // zero_grad(set_to_none=True): between steps a rank holds no gradients.
    RoleScope role(trace::MemoryRole::GradShard);
    const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(device_);
    unit.gradShard = allocateForCollective([&] { return at::empty({unit.shard.numel()}, fp32); });
  }
  for (size_t k = 0; k < unit.params.size(); ++k) {
    const int i = unit.params[k];
    auto& p = live_[i];
    auto& acc = accumulated_[i];
    if (acc.defined() && p.grad().defined()) acc.add_(p.grad());  // earlier micro-batches' + this one's
    const at::Tensor& grad = acc.defined() ? acc : p.grad();
    if (grad.defined()) flat.narrow(0, unit.offsets[k], p.numel()).copy_(grad.reshape({-1}));
    p.mutable_grad() = at::Tensor();  // the unsharded gradient is freed here, as in FSDP2
    acc = at::Tensor();
  }
  flat.mul_(1.0 / dataParallelRanks_);
  reduceScatterInput_ = flat;
  reduceScatterUnit_ = &unit;
  reduceScatter_ = comm_.reduceScatterSumAsync(unit.gradShard, reduceScatterInput_, unit.name);
}

void ShardedStrategy::keepUnreduced(Unit& unit) {
  if (computeDtype_ == at::kFloat) return;  // autograd adds the next micro-batch's into .grad
  RoleScope role(trace::MemoryRole::GradFull);
  UnitScope memoryOf(unit.modelUnit);
  for (int i : unit.params) {
    auto& p = live_[i];
    if (!p.grad().defined()) continue;
    if (accumulated_[i].defined())
      accumulated_[i].add_(p.grad());
    else
      accumulated_[i] = p.grad().to(at::kFloat);
    p.mutable_grad() = at::Tensor();
  }
}

void ShardedStrategy::waitForReduceScatter() {
  if (!reduceScatter_) return;
  reduceScatter_->wait();
  Unit& unit = *reduceScatterUnit_;
  if (offload_ && !replicate_) copyGradientToHost(unit, *reduceScatter_);
  reduceScatter_.reset();
  reduceScatterInput_ = at::Tensor();
  reduceScatterUnit_ = nullptr;
  if (!replicate_) return;
  waitForAllReduce();  // one in flight, as one reduce-scatter is
  gate().enter(trace::GroupKind::Collective, "all_reduce " + unit.name);
  UnitScope memoryOf(unit.modelUnit);
  // On a GPU the gradient shard came from the shard group's stream pool and the all-reduce runs
  // on the replicate group's stream: safe, as the wait above ordered this stream after the
  // reduce-scatter, the all-reduce is ordered after this stream, and the shard is freed only in
  // step(), after finishBackward has waited for the all-reduce (under --offload cpu once its copy
  // to the host is queued on the shard group's stream, after the all-reduce's end).
  // See Note [freeing collective buffers] in engine/comm/collective_stream.h.
  allReduce_ = replicate_->allReduceSumAsync(unit.gradShard, unit.name);
  allReduceUnit_ = &unit;
}

void ShardedStrategy::waitForAllReduce() {
  if (!allReduce_) return;
  allReduce_->wait();
  if (offload_) copyGradientToHost(*allReduceUnit_, *allReduce_);
  allReduce_.reset();
  allReduceUnit_ = nullptr;
}

void ShardedStrategy::unshardStage(int stage) {
  for (int u : unitsOfStage(stage)) issueUnshard(units_[u]);  // a LoRA block's two gathers overlap
  for (int u : unitsOfStage(stage)) unshard(units_[u]);
}

void ShardedStrategy::beforeForward(int stage) {
  unshardStage(stage);
  prefetch(stage, +1);
}

void ShardedStrategy::afterForward(int stage) {
  if (model_.stageUnit(stage) == config::kRootUnit || !reshardAfterForward_) return;
  for (int u : unitsOfStage(stage)) reshard(units_[u]);
}

void ShardedStrategy::beforeBackward(int stage) {
  unshardStage(stage);
  prefetch(stage, -1);
}

void ShardedStrategy::afterBackward(int stage) {
  // A unit's gradients are complete after the backward of its first stage in forward order. The
  // root spans the first and the last stage, and the first's backward runs last; a pipeline
  // stage's slice (engine/models/stage_slice.h) may hold only one of them: its head.
  if (model_.stageUnit(stage) == config::kRootUnit) {
    for (int earlier = 0; earlier < stage; ++earlier) {
      if (model_.stageUnit(earlier) == config::kRootUnit) return;  // its first stage's backward is still to come
    }
  }
  for (int u : unitsOfStage(stage)) {
    if (units_[u].trainable) {
      if (sync_)
        reduceGradients(units_[u]);
      else
        keepUnreduced(units_[u]);
    }
    reshard(units_[u]);
  }
}

void ShardedStrategy::finishBackward() {
  waitForReduceScatter();
  waitForAllReduce();
  // Offload: the optimizer steps on the CPU, so the host waits until every gradient has landed.
  if (offload_) {
    if (const auto stream = comm_.collectiveStream()) stream->synchronize();
  }
}

void ShardedStrategy::step() {
  for (Unit& unit : units_) {
    if (unit.trainable) unit.shard.mutable_grad() = offload_ ? unit.hostGradShard : unit.gradShard;
  }
  {
    // Offload: the step runs on the host, and what it allocates there (its state) is host memory.
    std::optional<HostMemoryScope> host;
    if (offload_) host.emplace();
    optimizer_->step();
  }
  if (!optimizerStateAssigned_) {
    std::vector<at::Tensor> shards;
    std::vector<int32_t> owners;
    for (const Unit& unit : units_) {
      shards.push_back(unit.shard);
      owners.push_back(unit.modelUnit);
    }
    assignOptimizerStateToUnits(*optimizer_, shards, owners);
    optimizerStateAssigned_ = true;
  }
  for (Unit& unit : units_) {
    if (!unit.trainable) continue;
    unit.shard.mutable_grad() = at::Tensor();
    unit.gradShard = at::Tensor();  // zero_grad(set_to_none=True)
    unit.hostGradShard = at::Tensor();
  }
}

std::map<std::string, at::Tensor> ShardedStrategy::fullParameters() {
  std::map<std::string, at::Tensor> out;
  const auto& specs = model_.params();
  for (Unit& unit : units_) {
    const auto options = unit.shard.options().device(device_).pinned_memory(false).requires_grad(false);
    auto full = at::empty({unit.paddedNumel}, options);
    auto shard = unit.shard.detach().to(device_);  // offload: from the host for the collective
    comm_.allGather(full, shard, unit.name + " (export)");
    for (size_t k = 0; k < unit.params.size(); ++k) {
      const int i = unit.params[k];
      out[specs[i].name] = full.narrow(0, unit.offsets[k], live_[i].numel())
                               .view(specs[i].shape)
                               .to(at::kCPU, at::kFloat, false, /*copy=*/true);
    }
  }
  return out;
}

std::vector<HeldTensor> ShardedStrategy::heldTensors() const {
  std::vector<HeldTensor> out;
  for (const Unit& unit : units_) {
    auto bytesOf = [](const at::Tensor& t) { return static_cast<int64_t>(t.storage().nbytes()); };
    out.push_back(
        {unit.name + ".shard", trace::MemoryRole::ParamShard, unit.shard.numel(), bytesOf(unit.shard), offload_});
    if (unit.gradShard.defined()) {
      out.push_back(
          {unit.name + ".grad_shard", trace::MemoryRole::GradShard, unit.gradShard.numel(), bytesOf(unit.gradShard)});
    }
    if (unit.hostGradShard.defined()) {
      out.push_back({unit.name + ".grad_shard", trace::MemoryRole::GradShard, unit.hostGradShard.numel(),
                     bytesOf(unit.hostGradShard),
                     /*host=*/true});
    }
    const int64_t gatheredBytes = bytesOf(unit.gathered);
    out.push_back({unit.name + ".gathered", trace::MemoryRole::ParamGathered,
                   gatheredBytes / unit.gathered.element_size(), gatheredBytes});
    for (int i : unit.params) {
      const auto& g = live_[i].grad();
      if (g.defined()) {
        out.push_back({model_.params()[i].name + ".grad", trace::MemoryRole::GradFull, g.numel(), bytesOf(g)});
      }
      const auto& acc = accumulated_[i];
      if (acc.defined()) {
        out.push_back({model_.params()[i].name + ".grad (fp32, accumulated)", trace::MemoryRole::GradFull, acc.numel(),
                       bytesOf(acc)});
      }
    }
  }
  append(out, optimizerStateTensors(*optimizer_, offload_));
  return out;
}

}  // namespace shardscope::engine
