// Where a c10d collective is queued. On CPU (Gloo) a collective runs on Gloo's threads and its Work
// completes on the host. On a GPU, the device orders work: shardscope queues every collective on a
// communication stream of its own that first waits (a CUDA event, no host sync) for what the
// caller's stream queued so far, as FSDP2's all-gather and reduce-scatter streams and DDP's
// reducer do; the caller's stream later waits for the collective's end event. That is what lets an
// all-gather prefetch or a bucket all-reduce overlap compute.
//
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

namespace shardscope {

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

}  // namespace shardscope
