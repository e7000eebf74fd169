// A Communicator that records every collective it forwards: op, label, bytes in and out, group
// size, phase, and issue/start/end times on the host clock. On a GPU, start and end are where the
// communication stream reached and passed the collective (CUDA events mapped onto the host clock);
// on CPU, Gloo gives no separate start signal, so start = issue and end = when its future
// completes (stamped on Gloo's thread), not when the training thread waits for it
// (Note [stream ordering] in engine/comm/collective_stream.h). A collective the backend fails
// instead (its timeout passed, a peer went away) is recorded as a CollectiveFailed event, where the
// rank saw it fail, with no span. What a backend allocates to stage a collective is comm_buffer:
// see Note [staging buffers] in engine/recording/recorder.h.
#pragma once

#include "engine/comm/communicator.h"
#include "trace/events.h"

namespace shardscope::engine {

class RankRecorder;

class RecordingCommunicator final : public Communicator {
 public:
  // Records into `recorder` (which outlives it); `group` names, in every event, which of the mesh's
  // process groups `inner` is.
  RecordingCommunicator(RankRecorder& recorder, std::unique_ptr<Communicator> inner,
                        trace::ProcessGroup group = trace::ProcessGroup::World);

  int rank() const override { return inner_->rank(); }
  int worldSize() const override { return inner_->worldSize(); }
  std::string backendName() const override { return inner_->backendName(); }
  std::string reduceScatterImplementation() const override { return inner_->reduceScatterImplementation(); }
  std::string allGatherImplementation() const override { return inner_->allGatherImplementation(); }
  std::optional<c10::Stream> collectiveStream() const override { return inner_->collectiveStream(); }

  std::unique_ptr<PendingCollective> allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                    const std::string& label) override;
  std::unique_ptr<PendingCollective> reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                           const std::string& label) override;
  std::unique_ptr<PendingCollective> allReduceSumAsync(at::Tensor& tensor, const std::string& label) override;
  std::unique_ptr<PendingCollective> broadcastAsync(at::Tensor& tensor, int root, const std::string& label) override;
  // Recorded as send or recv with its peer, the message's bytes in and out (its size either way).
  std::unique_ptr<PendingCollective> sendAsync(at::Tensor& tensor, int peer, int tag,
                                               const std::string& label) override;
  std::unique_ptr<PendingCollective> recvAsync(at::Tensor& tensor, int peer, int tag,
                                               const std::string& label) override;
  bool batchesPointToPoint() const override;
  SendRecvPending sendRecvAsync(const Transfer& send, const Transfer& recv) override;
  void barrier(const std::string& label) override;
  void close() override { inner_->close(); }

 private:
  // The collective's event, with its issue time now; announced as issued before it is (see below).
  trace::Event collectiveEvent(trace::CollectiveOp op, const std::string& label, int64_t bytesIn, int64_t bytesOut,
                               int peer = 0);
  // Sends a CollectiveIssued copy of `event`, numbered in this group: a collective the rank then
  // waits in forever is known to the controller, whose recorded Collective comes only once it ends.
  void announce(const trace::Event& event);

  RankRecorder& recorder_;
  std::unique_ptr<Communicator> inner_;
  trace::ProcessGroup group_;
  int64_t issued_ = 0;  // collectives issued in this group so far, recorded or not
};

}  // namespace shardscope::engine
