// FULL_SHARD (ZeRO-3) and SHARD_GRAD_OP (ZeRO-2), after FSDP2's FSDPParamGroup.
//
// Design: one unit per block plus a root unit for the remaining parameters (under LoRA, a block's
// frozen weights and its adapters are two units, both gathered for the block's stage). A unit's parameters are
// flattened (registration order) and padded to a multiple of the world size; each rank keeps its
// contiguous 1/N slice (param_shard), the gradient of that slice (grad_shard) and optimizer state for
// it only. To compute, a unit is "unsharded": a flat buffer gets storage and is all-gathered into;
// the parameters the model sees are leaf views of that buffer. "Resharding" frees the buffer's
// storage but keeps the tensor, and the backward all-gather refills the very same storage (FSDP1's
// _free_storage/_alloc_storage; see Note [freeing gathered parameters] in storage_resize.h).
//
//   forward of a unit:  all-gather -> compute -> free (full_shard) | keep (shard_grad_op)
//   backward of a unit: all-gather if freed -> compute -> reduce-scatter grads -> free
//
// The root unit is gathered once before the first stage and freed after its backward, as FSDP2
// keeps the root unsharded between forward and backward. Memory per rank between steps:
// (params + grads + optimizer state) / N, up to padding.
//
// Overlap, as FSDP2 does it: before a unit computes, the all-gathers of the next --prefetch units
// (in forward order during forward, in backward order during backward) are issued, so they run
// while this unit computes; a unit's reduce-scatter is issued as soon as its gradients exist and
// waited for only when the next one is issued (or at the end of backward). On a GPU "waiting"
// orders streams and never blocks the host; on CPU, Gloo runs the issued collectives on its own
// threads (Note [stream ordering] in engine/comm/collective_stream.h).
//
// HSDP (hybrid_shard, hybrid_shard_zero2; FSDP2 on a 2-D mesh, FSDP1's HYBRID_SHARD): units are
// sharded over the rank's shard group instead of the world, so 1/S per rank; the reduce-scatter runs
// in the shard group, and its output, the shard's gradient summed over the group, is then
// all-reduced across the replicate group (the ranks holding the same shard), as FSDP2's
// foreach_reduce does with its all_reduce_group. That all-reduce is issued when the next unit's
// reduce-scatter is, so it overlaps the backward too.
//
// Mixed precision (--precision bf16, FSDP2's MixedPrecisionPolicy(param_dtype=bf16,
// reduce_dtype=fp32)): shards, gradient shards and optimizer state stay fp32 (the master weights);
// each all-gather sends a bf16 copy of the shard, written in place into the rank's own slice of
// the bf16 buffer the model computes with; bf16 gradients are cast to fp32 before the
// reduce-scatter.
//
// CPU offload (--offload cpu, FSDP2's CPUOffloadPolicy(pin_memory=True)): shards and gradient
// shards live in pinned host memory, the optimizer state in host memory. Before a unit's
// all-gather its shard is copied to the device (and cast there under bf16) on the communication
// stream, so the copy overlaps compute as FSDP2's copy-in on its all-gather stream does; once a
// unit's gradient shard is reduced (after the replicate all-reduce on a hybrid mesh) it is copied
// back to the host on that stream, after the reduction and not after the compute queued since,
// and its device copy freed. Before the optimizer step, which runs on the CPU, the host waits for
// those copies, as FSDP2 waits on its grad_offload_event.
#pragma once

#include "engine/strategies/strategy.h"

namespace torch::optim {
class Optimizer;
}

namespace shardscope::engine {

class ShardedStrategy final : public Strategy {
 public:
  ShardedStrategy(const config::RunConfig& config, const StagedModel& model, const ProcessMesh& mesh,
                  const at::Device& device, bool reshardAfterForward, StepGate& gate);
  ~ShardedStrategy() override;

  const std::vector<at::Tensor>& liveParameters() const override { return live_; }
  void beforeForward(int stage) override;
  void afterForward(int stage) override;
  void beforeBackward(int stage) override;
  // full_shard frees what it gathered for I, as after a forward; W gathers it again.
  void afterBackwardInput(int stage) override { afterForward(stage); }
  void afterBackward(int stage) override;
  void finishBackward() override;
  void setGradientSync(bool sync) override { sync_ = sync; }
  void step() override;
  std::map<std::string, at::Tensor> fullParameters() override;
  std::vector<HeldTensor> heldTensors() const override;

 private:
  // Where a unit's parameters are, as FSDP2's ShardedState: only the shard (its gathered buffer has
  // no storage); an all-gather issued into the gathered buffer, not yet waited for; gathered.
  enum class UnitState { Sharded, Unsharding, Unsharded };
  struct Unit {
    std::string name;              // "blocks.3" or "root"; "blocks.3.lora" for LoRA's adapters
    int32_t modelUnit = -1;        // the model unit it is part of: block index, or -1 (the root)
    bool trainable = true;         // false: frozen parameters, gathered but never reduced
    std::vector<int> params;       // model parameter indices
    std::vector<int64_t> offsets;  // element offset of each parameter in the flat buffer
    int64_t numel = 0;             // unpadded elements
    int64_t paddedNumel = 0;       // multiple of the world size
    at::Tensor shard;              // [paddedNumel / N], owned by the optimizer
    at::Tensor gradShard;          // [paddedNumel / N] during backward and the optimizer step
                                   // (offload: on the device until copied to hostGradShard)
    at::Tensor hostGradShard;      // offload: the gradient shard in pinned host memory
    at::Tensor gathered;           // [paddedNumel], compute dtype; storage freed while resharded
    UnitState state = UnitState::Sharded;
    std::unique_ptr<PendingCollective> gather;  // while Unsharding: the all-gather to wait for
    at::Tensor gatherInput;                     // what the pending all-gather sends: the shard, or under
                                                // bf16 this rank's slice of `gathered` holding its copy
  };

  const std::vector<int>& unitsOfStage(int stage) const;  // indices into units_
  void unshardStage(int stage);                           // every unit of the stage gathered and waited for
  // The unit's shard and gathered buffer from `flat`, its full fp32 values (padded).
  void buildUnit(Unit& unit, const at::Tensor& flat, int shardRanks, int rank, const at::Device& device);
  void issueUnshard(Unit& unit);  // allocates and issues the all-gather, if not done yet
  // Offload: the unit's shard copied to the device, in the compute dtype: the all-gather's input
  // (under bf16 this rank's slice of `gathered`).
  at::Tensor copyShardToDevice(Unit& unit);
  // Offload: the unit's gradient shard, once `reduction` (its last) has written it, copied to
  // pinned host memory; the device's freed.
  void copyGradientToHost(Unit& unit, PendingCollective& reduction);
  // Runs `copy` on the communication stream, after `after` there or, without one, once the
  // caller's stream has queued what precedes it (so memory reused from that stream's pool is
  // free); in place where there is no such stream. See Note [stream ordering] and
  // Note [freeing collective buffers] in engine/comm/collective_stream.h.
  template <typename Fn>
  void onCommunicationStream(PendingCollective* after, Fn&& copy);
  void unshard(Unit& unit);                 // issueUnshard, then waits for it
  void prefetch(int stage, int direction);  // issueUnshard for the next --prefetch stages' units
  void reshard(Unit& unit);
  void reduceGradients(Unit& unit);
  // Without sync: keeps a unit's unsharded gradients for the next micro-batch; under bf16 in fp32,
  // as FSDP2 upcasts them to the reduce dtype (FSDPParam.to_accumulated_grad_if_needed).
  void keepUnreduced(Unit& unit);
  // Waits for the reduce-scatter in flight and, on a hybrid mesh, issues its all-reduce across the
  // replicate group (after waiting for the one before it).
  void waitForReduceScatter();
  void waitForAllReduce();
  template <typename Fn>
  auto allocateForCollective(Fn&& allocate);

  const StagedModel& model_;
  Communicator& comm_;       // the shard group: all-gathers and reduce-scatters
  Communicator* replicate_;  // the replicate group on a hybrid mesh: gradient all-reduces; or null
  int dataParallelRanks_;    // ranks whose gradients are averaged: the whole world
  bool reshardAfterForward_;
  int prefetchDepth_;
  at::ScalarType computeDtype_;
  std::unique_ptr<PendingCollective> reduceScatter_;  // the one in flight
  at::Tensor reduceScatterInput_;                     // its flat fp32 gradients
  Unit* reduceScatterUnit_ = nullptr;                 // whose gradients it reduces
  std::unique_ptr<PendingCollective> allReduce_;      // hybrid: the gradient shard's all-reduce in flight
  Unit* allReduceUnit_ = nullptr;                     // whose gradient shard it reduces
  at::Device device_;                                 // where units compute
  bool offload_;                             // --offload cpu: shards, gradients and optimizer state on the host
  std::vector<Unit> units_;                  // blocks 0..L-1, then root (frozen before trained units of a slot)
  std::vector<std::vector<int>> slotUnits_;  // per block, then the root: its units' indices
  std::vector<at::Tensor> live_;
  std::vector<at::Tensor> accumulated_;  // per parameter: fp32 unsharded gradient kept across
                                         // micro-batches under bf16; undefined otherwise
  bool sync_ = true;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  bool optimizerStateAssigned_ = false;  // its state counted per unit (after the first step)
};

}  // namespace shardscope::engine
