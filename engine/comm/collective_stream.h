// Where a c10d collective is queued: a communication stream per GPU rank (CudaCollectiveStream);
// none on CPU, where a collective runs on Gloo's threads and its Work completes on the host.
//
// Note [stream ordering]
// On a GPU the device, not the host, orders communication against compute: CUDA events, no host
// sync in the step. Every collective is queued on the rank's one communication stream after an
// event that makes it wait for what the caller's stream queued so far (the inputs);
// PendingCollective::wait() makes the caller's current stream wait for the collective's end event
// and returns at once. So an all-gather prefetch or a bucket's all-reduce overlaps compute, as on
// FSDP2's all-gather and reduce-scatter streams and DDP's reducer. Collectives run on that stream
// in issue order (their kernels on it, or on ProcessGroupNCCL's stream, which it then waits for),
// so the DeviceClock marks queued on it just before and after one time that collective itself: a
// recorded collective spans where the stream reached it and passed it. Copies that must overlap
// compute (--offload cpu's shards in, gradients out) run on it too. On CPU wait() blocks, and a
// collective is timed from its issue to its Work's completion on Gloo's thread.
//
// Note [freeing collective buffers]
// Memory safety without recordStream (whose deferred frees pile up while the host runs ahead of a
// slow communication stream): a buffer that a collective touches and that is freed during the
// step is allocated on the communication stream itself, and is freed only after the caller's
// stream has waited for that collective's end (PendingCollective::wait). Freed, its block is
// reused only by a later allocation on the communication stream; that buffer's first use is
// either a collective (queued after the communication stream waited for the caller's stream) or a
// kernel on the caller's stream (which already waited for the old collective, and runs after the
// caller's own earlier kernels), so it never overlaps a use of the old buffer. A free without the
// wait would break this. Buffers that live for the whole run (shards, DDP buckets) need nothing.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include "engine/comm/communicator.h"

namespace shardscope::engine {

class CollectiveStream {
 public:
  virtual ~CollectiveStream() = default;
  // Runs `issue` (it enqueues one collective and returns its Work, possibly null) ordered after
  // the caller's queued work. `issue` is told the c10d asyncOp to pass: false queues the kernel on
  // the current stream (ProcessGroupNCCL's synchronous mode, as FSDP2 uses), true on the backend's
  // own stream.
  virtual std::unique_ptr<PendingCollective> run(
      const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue) = 0;
  virtual c10::Stream stream() const = 0;
};

}  // namespace shardscope::engine
