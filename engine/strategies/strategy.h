// A data-parallel strategy acts between the model's stages, where PyTorch's DDP reducer and FSDP's
// pre/post forward/backward hooks act. The training loop calls, for every stage s:
//   forward:  beforeForward(s), model stage, afterForward(s)
//   backward (s descending): beforeBackward(s), autograd of the stage, afterBackward(s)
// then finishBackward() and step().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/comm/communicator.h"
#include "engine/comm/process_mesh.h"
#include "engine/models/model.h"
#include "config/run_config.h"
#include "trace/events.h"

namespace shardscope::engine {

// One tensor a rank holds, for the memory inventory, by the trace vocabulary's role.
struct HeldTensor {
  std::string name;
  trace::MemoryRole role = trace::MemoryRole::Other;
  int64_t numel = 0;  // elements the tensor's storage holds right now
  int64_t bytes = 0;  // bytes of that storage
  bool host = false;  // kept in host memory under --offload cpu (a GPU rank's state moved off it)
};

// Inventories are assembled from parts (parameters, buckets, optimizer state).
inline void append(std::vector<HeldTensor>& out, const std::vector<HeldTensor>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

class StepGate;

class Strategy {
 public:
  // `gate`: where the strategy marks its hook points (engine/launch/step_gate.h).
  explicit Strategy(StepGate& gate) : gate_(gate) {}
  virtual ~Strategy() = default;

  StepGate& gate() const { return gate_; }

  // The tensors the model computes with, in model.params() order; valid during a stage.
  virtual const std::vector<at::Tensor>& liveParameters() const = 0;

  virtual void beforeForward(int stage) {}
  virtual void afterForward(int stage) {}
  virtual void beforeBackward(int stage) {}
  virtual void afterBackward(int stage) {}
  // Zero bubble's I has computed the stage's input gradient alone; its weights' (W) come later,
  // with beforeBackward again, and then afterBackward.
  virtual void afterBackwardInput(int stage) {}
  virtual void finishBackward() {}
  // Gradient accumulation: false for every micro-batch of a step but the last. Gradients then
  // accumulate unreduced (DDP's no_sync, FSDP2's set_requires_gradient_sync(False)) and
  // finishBackward() is not called; the last micro-batch reduces what they add up to.
  virtual void setGradientSync(bool sync) {}
  virtual void step() = 0;  // optimizer step on what this rank owns, then clears gradients

  // Full parameters by name, gathered from every rank (a collective: all ranks must call it).
  virtual std::map<std::string, at::Tensor> fullParameters() = 0;

  // What this rank holds right now.
  virtual std::vector<HeldTensor> heldTensors() const = 0;

 private:
  StepGate& gate_;
};

// The strategy of config.strategy over `mesh`: ddp and zero1 use its data group (the world without
// --tp); the sharded ones shard over its shard group and, on a hybrid mesh, all-reduce gradient
// shards over its replicate group. It marks its hook points at `gate`.
std::unique_ptr<Strategy> makeStrategy(const config::RunConfig& config, const StagedModel& model,
                                       const ProcessMesh& mesh, const at::Device& device, StepGate& gate);

}  // namespace shardscope::engine
