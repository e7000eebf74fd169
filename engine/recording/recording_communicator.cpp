#include "engine/recording/recording_communicator.h"

#include <vector>

#include "engine/recording/nvtx_ranges.h"
#include "engine/recording/recorder.h"

namespace shardscope::engine {

trace::Event RecordingCommunicator::collectiveEvent(trace::CollectiveOp op, const std::string& label, int64_t bytesIn,
                                                    int64_t bytesOut, int peer) {
  trace::Event e;
  e.kind = trace::EventKind::Collective;
  e.step = recorder_.step();
  e.microBatch = recorder_.microBatch();
  e.op = static_cast<uint8_t>(op);
  e.phase = static_cast<uint8_t>(currentPhase());
  e.text = label;
  e.bytes = bytesIn;
  e.bytesOut = bytesOut;
  e.worldSize = worldSize();
  e.processGroup = static_cast<uint8_t>(group_);
  e.peer = peer;
  e.issueNs = trace::nowNs();
  announce(e);
  return e;
}

void RecordingCommunicator::announce(const trace::Event& event) {
  // Counted whether or not recording is on, so that the numbers agree across ranks.
  ++issued_;
  if (!recorder_.enabled()) return;
  trace::Event issued = event;
  issued.kind = trace::EventKind::CollectiveIssued;
  issued.beginNs = event.issueNs;
  issued.sequence = issued_;
  recorder_.record(std::move(issued));
}

namespace {

int64_t bytesOf(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

// Each event recorded once `pending`'s times are known, or as failed once the backend has failed it.
void attachEvents(RankRecorder& recorder, PendingCollective& pending, std::vector<trace::Event> events) {
  if (!recorder.enabled()) return;
  pending.onEnded([&recorder, events = std::move(events)](const CollectiveEnd& how) mutable {
    for (trace::Event& event : events) {
      if (!how.completed) {
        event.kind = trace::EventKind::CollectiveFailed;
        event.beginNs = std::max(how.endNs, event.issueNs);
      } else {
        event.beginNs = std::max(how.beginNs, event.issueNs);
        event.endNs = std::max(how.endNs, event.beginNs);
      }
      recorder.recordLate(std::move(event));
    }
  });
}

// Issues the collective and attaches the event to it: it is recorded once the collective's times
// are known, or as failed once the backend has failed it. What the backend allocates while issuing
// is communication memory: see Note [staging buffers] in engine/recording/recorder.h.
template <typename Issue>  // a callable returning the inner communicator's pending
auto recordedIssue(Issue&& issue, const trace::Event& named) {
  RoleScope role(trace::MemoryRole::CommBuffer);
  // For nsys: the range holds the issue, so the kernel it launches is shown under its name.
  NvtxRange nvtx;
  if (nvtxListening()) nvtx.push(trace::collectiveSpanName(named));
  return issue();
}

template <typename Issue>  // a callable returning the inner communicator's PendingCollective
std::unique_ptr<PendingCollective> recorded(RankRecorder& recorder, Issue&& issue, trace::Event event) {
  std::unique_ptr<PendingCollective> pending = recordedIssue(issue, event);
  attachEvents(recorder, *pending, {std::move(event)});
  return pending;
}

}  // namespace

RecordingCommunicator::RecordingCommunicator(RankRecorder& recorder, std::unique_ptr<Communicator> inner,
                                             trace::ProcessGroup group)
    : recorder_(recorder), inner_(std::move(inner)), group_(group) {}

std::unique_ptr<PendingCollective> RecordingCommunicator::allGatherAsync(at::Tensor& output, at::Tensor& input,
                                                                         const std::string& label) {
  // nccl-tests size for all-gather: the whole output. Names an op built from others in the event.
  const std::string text =
      trace::collectiveText(label, inner_->allGatherImplementation(), trace::CollectiveOp::AllGather);
  auto event = collectiveEvent(trace::CollectiveOp::AllGather, text, bytesOf(input), bytesOf(output));
  return recorded(
      recorder_, [&] { return inner_->allGatherAsync(output, input, label); }, std::move(event));
}

std::unique_ptr<PendingCollective> RecordingCommunicator::reduceScatterSumAsync(at::Tensor& output, at::Tensor& input,
                                                                                const std::string& label) {
  // Names an op built from others (e.g. all-reduce + slice) in the event.
  const std::string text =
      trace::collectiveText(label, inner_->reduceScatterImplementation(), trace::CollectiveOp::ReduceScatter);
  auto event = collectiveEvent(trace::CollectiveOp::ReduceScatter, text, bytesOf(input), bytesOf(output));
  return recorded(
      recorder_, [&] { return inner_->reduceScatterSumAsync(output, input, label); }, std::move(event));
}

std::unique_ptr<PendingCollective> RecordingCommunicator::allReduceSumAsync(at::Tensor& tensor,
                                                                            const std::string& label) {
  auto event = collectiveEvent(trace::CollectiveOp::AllReduce, label, bytesOf(tensor), bytesOf(tensor));
  return recorded(
      recorder_, [&] { return inner_->allReduceSumAsync(tensor, label); }, std::move(event));
}

std::unique_ptr<PendingCollective> RecordingCommunicator::broadcastAsync(at::Tensor& tensor, int root,
                                                                         const std::string& label) {
  auto event = collectiveEvent(trace::CollectiveOp::Broadcast, label, bytesOf(tensor), bytesOf(tensor));
  return recorded(
      recorder_, [&] { return inner_->broadcastAsync(tensor, root, label); }, std::move(event));
}

std::unique_ptr<PendingCollective> RecordingCommunicator::sendAsync(at::Tensor& tensor, int peer, int tag,
                                                                    const std::string& label) {
  // The message's bytes in and out, as PyTorch's record_param_comms counts a send's and a recv's.
  auto event = collectiveEvent(trace::CollectiveOp::Send, label, bytesOf(tensor), bytesOf(tensor), peer);
  return recorded(
      recorder_, [&] { return inner_->sendAsync(tensor, peer, tag, label); }, std::move(event));
}

std::unique_ptr<PendingCollective> RecordingCommunicator::recvAsync(at::Tensor& tensor, int peer, int tag,
                                                                    const std::string& label) {
  auto event = collectiveEvent(trace::CollectiveOp::Recv, label, bytesOf(tensor), bytesOf(tensor), peer);
  return recorded(
      recorder_, [&] { return inner_->recvAsync(tensor, peer, tag, label); }, std::move(event));
}

bool RecordingCommunicator::batchesPointToPoint() const { return inner_->batchesPointToPoint(); }

Communicator::SendRecvPending RecordingCommunicator::sendRecvAsync(const Transfer& send, const Transfer& recv) {
  if (!inner_->batchesPointToPoint()) return Communicator::sendRecvAsync(send, recv);  // each recorded alone
  // One batch: the send and the receive both ran while it did.
  auto sent =
      collectiveEvent(trace::CollectiveOp::Send, send.label, bytesOf(*send.tensor), bytesOf(*send.tensor), send.peer);
  auto received =
      collectiveEvent(trace::CollectiveOp::Recv, recv.label, bytesOf(*recv.tensor), bytesOf(*recv.tensor), recv.peer);
  SendRecvPending out = recordedIssue([&] { return inner_->sendRecvAsync(send, recv); }, sent);
  attachEvents(recorder_, *out.both, {std::move(sent), std::move(received)});
  return out;
}

void RecordingCommunicator::barrier(const std::string& label) {
  auto event = collectiveEvent(trace::CollectiveOp::Barrier, label, 0, 0);
  try {
    NvtxRange nvtx;
    if (nvtxListening()) nvtx.push(trace::collectiveSpanName(event));
    inner_->barrier(label);
  } catch (...) {
    event.kind = trace::EventKind::CollectiveFailed;
    event.beginNs = trace::nowNs();
    recorder_.record(std::move(event));
    throw;
  }
  event.beginNs = event.issueNs;
  event.endNs = trace::nowNs();
  recorder_.record(std::move(event));
}

}  // namespace shardscope::engine
