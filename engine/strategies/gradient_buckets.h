// DDP's gradient reduction, after c10d's reducer.cpp, for every strategy that keeps whole
// gradients until they are averaged (ddp, zero1, no_shard: FSDP1's NO_SHARD, one bucket per unit). Gradients are packed
// into fp32 buckets filled in reverse parameter order (the first bucket small, the rest --bucket-cap-mb); a
// post-accumulate hook on each parameter's grad accumulator counts down its bucket, and a bucket whose gradients are
// all ready is all-reduced asynchronously during backward. Buckets launch strictly in index order so that every rank
// issues the same collectives in the same order (otherwise ranks could deadlock). On a GPU the all-reduce runs on the
// communication stream while backward goes on (Note [stream ordering] in engine/comm/collective_stream.h).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>

#include "engine/comm/communicator.h"
#include "engine/strategies/strategy.h"

namespace shardscope::engine {

class StepGate;

class GradientBuckets {
 public:
  // Hooks the grad accumulators of `live` (the tensors the model computes with). Not movable: the
  // hooks point at this object.
  // `gate`: where each bucket's all-reduce marks its hook point; null for none (the tests').
  // `unitOf` (each of `live`'s model unit): one bucket per unit instead of --bucket-cap-mb's, as
  // FSDP1's NO_SHARD all-reduces each unit's gradient once its backward is done.
  GradientBuckets(const std::vector<at::Tensor>& live, double bucketCapMb, Communicator& comm, StepGate* gate = nullptr,
                  const std::vector<int32_t>& unitOf = {});
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // After backward: waits for each bucket's all-reduce in turn and hands over every parameter's
  // averaged fp32 gradient (a flat view into the bucket, valid until the next backward fills the
  // bucket again). Throws if some parameter got no gradient, so its bucket never launched.
  void finish(const std::function<void(int param, const at::Tensor& averaged)>& take);

  // false: backward counts and launches nothing (DDP's no_sync); the next backward with it true
  // reduces what the micro-batches' gradients add up to. fp32 gradients add up in .grad, as in
  // PyTorch. bf16 ones (the compute copies under --precision bf16) are added into their fp32
  // bucket slot as each is ready, and .grad is released: adding them up in bf16 would round away
  // what PyTorch DDP under autocast keeps, whose .grad is fp32 (FSDP2 upcasts likewise).
  void setEnabled(bool enabled) { enabled_ = enabled; }

  // Parameter indices per bucket, in launch order.
  std::vector<std::vector<int>> layout() const;
  std::vector<HeldTensor> heldTensors() const;  // the buckets (comm_buffer)

 private:
  struct Bucket {
    std::string label;        // "bucket 3", or a unit bucket's unit: "blocks.3"
    std::vector<int> params;  // parameter indices, reverse registration order
    at::Tensor buffer;        // flat fp32 gradients, all-reduced in place
    int pending = 0;          // gradients not yet ready this step
    std::unique_ptr<PendingCollective> work;
  };

  static bool dividesWhileCopying(const Bucket& bucket, const std::vector<at::Tensor>& grads,
                                  const std::vector<at::Tensor>& partialSlots);
  void onGradReady(int param);
  void launchReadyBuckets();
  at::Tensor slotOf(int param);
  // A micro-batch's bf16 gradient into its fp32 slot, outside a reduction (see setEnabled).
  void accumulateInSlot(int param);

  std::vector<at::Tensor> live_;
  Communicator& comm_;
  StepGate* gate_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucketOf_;      // parameter index -> bucket index
  std::vector<int64_t> offsetOf_;  // parameter index -> element offset in its bucket's buffer
  // Parameters whose slot holds the sum of this step's earlier micro-batches (bf16 gradients only).
  std::vector<bool> inSlot_;
  std::vector<std::shared_ptr<torch::autograd::Node>> gradAccumulators_;
  int nextToLaunch_ = 0;
  bool enabled_ = true;
};

// Reducer's assignment: walk parameters in reverse order; close a bucket once it reaches its cap
// (1 MiB for the first, capBytes after). Returns parameter indices per bucket.
std::vector<std::vector<int>> assignBuckets(const std::vector<int64_t>& paramBytes, int64_t firstCapBytes,
                                            int64_t capBytes);

// One bucket per unit (`units[k]`: parameter k's), each in reverse parameter order, the buckets in
// the order backward completes them: by their first parameter, last first (a root unit holding the
// embedding and the head completes last, with the embedding). Returns parameter indices per bucket.
std::vector<std::vector<int>> assignUnitBuckets(const std::vector<int32_t>& units);

}  // namespace shardscope::engine
