// Communicator over any c10d::Backend: the same calls drive ProcessGroupGloo and ProcessGroupNCCL.
// With a CollectiveStream (GPU ranks) every collective is queued on the communication stream;
// without one (CPU ranks) it runs on the backend's threads and completes on the host.
// See Note [stream ordering] in engine/comm/collective_stream.h.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "engine/comm/collective_stream.h"
#include "engine/comm/communicator.h"

namespace shardscope::engine {

// How a backend runs the ops it lacks or runs slowly, composed from others it runs well. Events
// name the composition (Communicator::reduceScatterImplementation, allGatherImplementation).
struct CollectiveRecipes {
  bool nativeReduceScatter = true;       // false: all-reduce, then keep this rank's slice
  bool allGatherFromBroadcasts = false;  // true: each rank's part broadcast in place from it
};

class C10dCommunicator final : public Communicator {
 public:
  // `store` is the rendezvous store the backend bootstrapped from; close() meets the other ranks
  // there, outside the backend's own connections.
  C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, c10::intrusive_ptr<c10d::Store> store,
                   std::string backendName, CollectiveRecipes recipes,
                   std::unique_ptr<CollectiveStream> stream = nullptr);

  int rank() const override;
  int worldSize() const override;
  std::string backendName() const override { return backendName_; }

  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                    const std::string& label) override;
  std::unique_ptr<PendingCollective> reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                           const std::string& label) override;
  std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor, const std::string& label) override;
  std::unique_ptr<PendingCollective> broadcastAsync(at::Tensor& tensor, int root, const std::string& label) override;
  std::unique_ptr<PendingCollective> sendAsync(at::Tensor& tensor, int peer, int tag,
                                               const std::string& label) override;
  std::unique_ptr<PendingCollective> recvAsync(at::Tensor& tensor, int peer, int tag,
                                               const std::string& label) override;
  // NCCL: a send and a receive in one group (startCoalescing/endCoalescing, as batch_isend_irecv).
  bool batchesPointToPoint() const override;
  SendRecvPending sendRecvAsync(const Transfer& send, const Transfer& recv) override;
  void barrier(const std::string& label) override;
  // Meets every rank in the store, then abort()s the backend. The meeting is needed because a rank
  // that has passed the barrier is not proof that its peers have: over NCCL's socket transport
  // the GPU side of a collective completes once its last bytes are handed to the proxy thread,
  // so a rank that aborted straight away could cut those bytes off and leave a peer waiting in
  // the barrier until the watchdog killed it (seen on an H100 at world 2). abort(), not
  // shutdown(): shutdown waits for the communicators without a timeout. (Gloo implements neither.)
  void close() override;
  std::string reduceScatterImplementation() const override;
  std::string allGatherImplementation() const override;
  std::optional<c10::Stream> collectiveStream() const override;

 private:
  // `issue` gets the c10d asyncOp to pass (CollectiveStream::run).
  std::unique_ptr<PendingCollective> launch(const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue);
  // `issue` called, on Gloo one thread of the process at a time (c10d's Flight Recorder, .cpp).
  c10::intrusive_ptr<c10d::Work> issued(const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue,
                                        bool asyncOp) const;
  std::unique_ptr<PendingCollective> allGatherFromBroadcasts(at::Tensor& output, at::Tensor& input);

  c10::intrusive_ptr<c10d::Backend> backend_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string backendName_;
  CollectiveRecipes recipes_;
  std::unique_ptr<CollectiveStream> stream_;
};

}  // namespace shardscope::engine
