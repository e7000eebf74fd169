// The collectives a strategy needs, behind one interface that ProcessGroupGloo (CPU) and
// ProcessGroupNCCL (GPU) both implement through c10d. Every op reports which primitive really ran,
// so an op built from others (e.g. reduce-scatter from all-reduce) is named as such in events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

namespace shardscope::engine {

// How an issued collective ended, on the host clock.
struct CollectiveEnd {
  // False: the backend failed it (its timeout passed, a peer went away). It did not complete, and
  // is recorded as failed, not as a span ending at the failure, which would read as a completed
  // collective as long as the timeout.
  bool completed = true;
  int64_t beginNs = 0;  // completed: when it began (see onEnded); failed: its issue
  int64_t endNs = 0;    // completed: when it ended; failed: when the rank saw it fail
};

// An issued collective. On CPU, wait() blocks the calling thread until the result is usable. On a
// GPU it blocks nothing: it orders the calling thread's current stream after the collective (as
// c10d's Work::wait does for NCCL), so the host runs ahead and queues more work.
// See Note [stream ordering] in engine/comm/collective_stream.h.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Throws the backend's error for a collective that failed, once `ended` has been told of it.
  virtual void wait() = 0;
  // Calls `ended` (on any thread) once the collective has completed, with when it ran on the host
  // clock: on a GPU, where the communication stream reached it and passed it (CUDA events); on CPU,
  // its issue and its completion. Or, on CPU, once it has failed. Called at most once per
  // collective. A GPU collective's failure is not yet told apart from its completion.
  virtual void onEnded(std::function<void(const CollectiveEnd&)> ended) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual std::string backendName() const = 0;  // "gloo" | "nccl"

  // `label` names what the collective is for (an FSDP unit, a DDP bucket) in recorded events.
  // Tensors passed to an async op must stay alive until it has been waited for.

  // output (world * input.numel(), contiguous) <- concatenation of every rank's input, rank order.
  virtual std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                            const std::string& label) = 0;
  // output (input.numel() / world) <- this rank's slice of the elementwise sum of every input.
  virtual std::unique_ptr<PendingCollective> reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                                   const std::string& label) = 0;
  // tensor <- elementwise sum over ranks.
  virtual std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor, const std::string& label) = 0;
  virtual std::unique_ptr<PendingCollective> broadcastAsync(at::Tensor& tensor, int root, const std::string& label) = 0;
  // Point to point, between two ranks of the group (a pipeline's activations and their gradients):
  // `tensor` to group rank `peer`, or from it into `tensor`. `tag` pairs a send with its receive
  // where several are in flight between two ranks (Gloo; NCCL pairs them in the order issued).
  virtual std::unique_ptr<PendingCollective> sendAsync(at::Tensor& tensor, int peer, int tag,
                                                       const std::string& label) = 0;
  virtual std::unique_ptr<PendingCollective> recvAsync(at::Tensor& tensor, int peer, int tag,
                                                       const std::string& label) = 0;
  // A send and a receive issued at once (a pipeline's activation out and gradient in, as
  // torch.distributed's batch_isend_irecv issues them). Where the backend batches point-to-point
  // (batchesPointToPoint: NCCL, in one ncclGroupStart/End), one batch, `both`, that ends when both
  // have; elsewhere (Gloo) the send, then the receive, each its own.
  struct Transfer {
    at::Tensor* tensor = nullptr;
    int peer = 0, tag = 0;
    std::string label;
    // What a recording says it was for, where it differs from the rank's current micro-batch and
    // phase (a batch's send, issued with its receive): -1, the current.
    int microBatch = -1, phase = -1;
  };
  struct SendRecvPending {
    std::unique_ptr<PendingCollective> send, recv;  // null where batched
    std::unique_ptr<PendingCollective> both;        // null where not
  };
  virtual bool batchesPointToPoint() const { return false; }
  virtual SendRecvPending sendRecvAsync(const Transfer& send, const Transfer& recv) {
    SendRecvPending out;
    out.send = sendAsync(*send.tensor, send.peer, send.tag, send.label);
    out.recv = recvAsync(*recv.tensor, recv.peer, recv.tag, recv.label);
    return out;
  }
  // Blocks the host until every rank has arrived.
  virtual void barrier(const std::string& label) = 0;
  // End of a finished run, every rank past the final barrier with nothing in flight: releases the
  // backend's connections. ProcessGroupNCCL's destructor would abort them too, but first warns that
  // destroy_process_group() was not called, once per rank.
  virtual void close() = 0;

  void allGather(at::Tensor& output, at::Tensor& input, const std::string& label) {
    allGatherAsync(output, input, label)->wait();
  }
  void reduceScatterSum(at::Tensor& output, at::Tensor& input, const std::string& label) {
    reduceScatterSumAsync(output, input, label)->wait();
  }
  void broadcast(at::Tensor& tensor, int root, const std::string& label) {
    broadcastAsync(tensor, root, label)->wait();
  }

  // The stream collectives run on, where the device orders them (GPU); nothing on CPU. A buffer a
  // collective writes or reads and that is freed while the step goes on is allocated on it, as FSDP2
  // allocates its all-gather outputs on the all-gather stream. See Note [freeing collective buffers]
  // in engine/comm/collective_stream.h.
  virtual std::optional<c10::Stream> collectiveStream() const { return std::nullopt; }

  // How the op is implemented by this backend, e.g. "reduce_scatter" or
  // "reduce_scatter(all_reduce+slice)" where the backend lacks the native op.
  virtual std::string reduceScatterImplementation() const = 0;
  // "all_gather", or "all_gather(broadcast from each rank)" where the backend's own is slower.
  virtual std::string allGatherImplementation() const = 0;
};

struct RendezvousInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localWorldSize = 1;  // ranks on this host (LOCAL_WORLD_SIZE; WORLD_SIZE when unset)
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  double collectiveTimeoutS = 300;  // how long a collective may wait before it fails (--collective-timeout)
};

// Reads torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT).
// Throws std::runtime_error naming the variable when one is missing or malformed.
RendezvousInfo rendezvousFromEnvironment();

class RankDevice;

}  // namespace shardscope::engine
