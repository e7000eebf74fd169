#include "engine/recording_communicator.h"

#include "engine/recorder.h"

namespace shardscope {

namespace {

trace::Event collectiveEvent(trace::CollectiveOp op, const std::string& label, int64_t bytesIn,
                             int64_t bytesOut, int groupSize, int64_t issueNs) {
  trace::Event e;
  e.kind = trace::EventKind::Collective;
  e.step = RankRecorder::instance().step();
  e.op = static_cast<uint8_t>(op);
  e.phase = static_cast<uint8_t>(currentPhase());
  e.text = label;
  e.bytes = bytesIn;
  e.bytesOut = bytesOut;
  e.worldSize = groupSize;
  e.issueNs = issueNs;
  e.beginNs = issueNs;
  return e;
}

int64_t bytesOf(const at::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

template <typename Fn>
void recordBlocking(trace::Event e, Fn&& run) {
  run();
  e.endNs = trace::nowNs();
  RankRecorder::instance().record(std::move(e));
}

}  // namespace

RecordingCommunicator::RecordingCommunicator(std::unique_ptr<Communicator> inner)
    : inner_(std::move(inner)) {}

void RecordingCommunicator::allGather(at::Tensor& output, at::Tensor& input,
                                      const std::string& label) {
  // nccl-tests size for all-gather: the whole output.
  recordBlocking(collectiveEvent(trace::CollectiveOp::AllGather, label, bytesOf(input),
                                 bytesOf(output), worldSize(), trace::nowNs()),
                 [&] { inner_->allGather(output, input, label); });
}

void RecordingCommunicator::reduceScatterSum(at::Tensor& output, at::Tensor& input,
                                             const std::string& label) {
  // Names an op built from others (e.g. all-reduce + slice) in the event.
  const std::string text = trace::collectiveText(label, inner_->reduceScatterImplementation(),
                                                 trace::CollectiveOp::ReduceScatter);
  recordBlocking(collectiveEvent(trace::CollectiveOp::ReduceScatter, text, bytesOf(input),
                                 bytesOf(output), worldSize(), trace::nowNs()),
                 [&] { inner_->reduceScatterSum(output, input, label); });
}

std::unique_ptr<PendingCollective> RecordingCommunicator::allReduceSumAsync(
    at::Tensor& tensor, const std::string& label) {
  auto event = collectiveEvent(trace::CollectiveOp::AllReduce, label, bytesOf(tensor),
                               bytesOf(tensor), worldSize(), trace::nowNs());
  auto pending = inner_->allReduceSumAsync(tensor, label);
  if (RankRecorder::instance().enabled()) {
    pending->onComplete([event = std::move(event)]() mutable {
      event.endNs = trace::nowNs();
      RankRecorder::instance().record(std::move(event));
    });
  }
  return pending;
}

void RecordingCommunicator::broadcast(at::Tensor& tensor, int root, const std::string& label) {
  recordBlocking(collectiveEvent(trace::CollectiveOp::Broadcast, label, bytesOf(tensor),
                                 bytesOf(tensor), worldSize(), trace::nowNs()),
                 [&] { inner_->broadcast(tensor, root, label); });
}

void RecordingCommunicator::barrier(const std::string& label) {
  recordBlocking(collectiveEvent(trace::CollectiveOp::Barrier, label, 0, 0, worldSize(),
                                 trace::nowNs()),
                 [&] { inner_->barrier(label); });
}

}  // namespace shardscope
