// Predictions, not measurements: what each rank of a shardscope run should hold and send per step,
// from the model's layout (config/model_layout.h), the world size, the strategy, the precision, the
// prefetch depth and the optimizer. The closed forms are written out in docs/estimate.md; the
// tests hold them against measured runs. Activations and communication buffers are not predicted:
// they depend on kernels and libraries, so they are left to the measurement.
// Under --tp the model states are those of a rank's tensor-parallel slices
// (config/tensor_parallel.h), the strategy's collectives run in the data group, and the tensor
// group's collectives are predicted too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/events.h"
#include "config/run_config.h"

namespace shardscope::estimate {

enum class When { Peak, AfterStep };  // a role's maximum, or what stays between steps

struct PredictedMemory {
  trace::MemoryRole role;
  When when;
  int64_t bytes;
  std::string formula;  // how the bytes come about, e.g. "4 B x 1/N of the padded parameters"
  bool host = false;    // --offload cpu: in the rank's host memory, not the device's
};

struct PredictedCollective {
  trace::CollectiveOp op;
  int64_t count;  // per step; -1 when it depends on bucketing (ddp)
  int64_t bytes;  // per step, the collectives' size as the summary counts it (all-gather: its output)
  std::string formula;
  int64_t sentBytes = 0;  // per step, what each rank sends (and receives) of them under the ring schedule
  trace::ProcessGroup group = trace::ProcessGroup::World;  // where they run (HSDP: shard or replicate)
  int groupSize = 0;                                       // ranks in that group; filled in by predictRun
};

struct RunPrediction {
  int64_t parameters = 0;        // elements
  int64_t paddedParameters = 0;  // sharded strategies: each unit padded to a multiple of N
  std::vector<PredictedMemory> memory;
  std::vector<PredictedCollective> perStep;  // training collectives (not the loss for the log line)
  int64_t sentBytesPerStep() const;          // over all of them
  // gpt: the activations a rank saves for backward (activation_memory.h); 0 for mlp, not predicted.
  int64_t activationSavedBytes = 0;
  std::string activationFormula;
  // The sum of the predicted roles on the device: parameters, gradients and optimizer state at
  // their peaks (under --offload cpu the shards, their gradients and the optimizer's state are the
  // host's instead: hostBytes(); the device keeps a unit's passing copies of them).
  int64_t modelStateBytes() const;
  int64_t hostBytes() const;
  // A role's prediction on the device or on the host: under --offload cpu a role can be predicted
  // on both (the host's, and the device's passing copies).
  const PredictedMemory* find(trace::MemoryRole role, bool host) const;
  // The strategy's collectives of `op` (in the world, its shard, replicate or data group); under
  // --tp the tensor group's are tensorGroup(op)'s: all-reduces, and under --sequence-parallel
  // all-gathers and reduce-scatters too.
  const PredictedCollective* find(trace::CollectiveOp op) const;
  const PredictedCollective* tensorGroup(trace::CollectiveOp op) const;  // null when it runs none of `op`
};

// For a configuration that validate() accepts.
RunPrediction predictRun(const config::RunConfig& config);

// Why predictRun cannot take `config`, or nothing: validate() less what only a real run needs.
// The batch shapes activations only, which are not predicted, and nothing is written.
std::optional<std::string> predictionProblem(const config::RunConfig& config);

// Whether a run of `measured` is a measurement of what predictRun(`predicted`) predicts, strategy
// aside: the same model sizes, world size, precision, prefetch depth, optimizer and offload.
bool samePrediction(const config::RunConfig& predicted, const config::RunConfig& measured);

}  // namespace shardscope::estimate
