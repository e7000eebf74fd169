#include "engine/cuda/cuda_collective_stream.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>

#include "engine/recording/device_clock.h"

namespace shardscope::engine {

namespace {

class StreamPending final : public PendingCollective {
 public:
  StreamPending(c10::DeviceIndex device, std::shared_ptr<at::cuda::CUDAEvent> done, DeviceClock::Mark begin,
                DeviceClock::Mark end)
      : device_(device), done_(std::move(done)), begin_(begin), end_(end) {}
  ~StreamPending() override {
    if (begin_) deviceClock()->whenReached(begin_, end_, [](int64_t, int64_t) {});  // hand back
  }
  // Orders the caller's current stream after the collective; the host does not wait.
  void wait() override { done_->block(c10::cuda::getCurrentCUDAStream(device_)); }
  void onEnded(std::function<void(const CollectiveEnd&)> ended) override {
    if (!begin_) return;
    deviceClock()->whenReached(begin_, end_, [ended = std::move(ended)](int64_t beginNs, int64_t endNs) {
      ended({true, beginNs, endNs});
    });
    begin_ = end_ = nullptr;
  }

 private:
  c10::DeviceIndex device_;
  std::shared_ptr<at::cuda::CUDAEvent> done_;
  DeviceClock::Mark begin_;
  DeviceClock::Mark end_;
};

}  // namespace

CudaCollectiveStream::CudaCollectiveStream(c10::DeviceIndex device, KernelStream kernels)
    : device_(device), kernels_(kernels), comm_(c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device)) {}

std::unique_ptr<PendingCollective> CudaCollectiveStream::run(
    const std::function<c10::intrusive_ptr<c10d::Work>(bool asyncOp)>& issue) {
  // The communication stream starts the collective only once the caller's stream has produced its
  // inputs and finished with whatever memory its outputs reuse. See Note [stream ordering] in
  // engine/comm/collective_stream.h.
  at::cuda::CUDAEvent ready;
  ready.record(c10::cuda::getCurrentCUDAStream(device_));
  ready.block(comm_);
  c10::cuda::CUDAStreamGuard onComm(comm_);
  DeviceClock* clock = deviceClock();
  DeviceClock::Mark begin = clock ? clock->mark() : nullptr;
  // Own: ProcessGroupNCCL queues the kernel on the current (communication) stream itself.
  // ProcessGroups: it queues it on its NCCL stream after the current stream, and wait() makes the
  // communication stream wait for the kernel, without a host sync.
  const bool onProcessGroupsStream = kernels_ == KernelStream::ProcessGroups;
  auto work = issue(onProcessGroupsStream);
  if (work && onProcessGroupsStream) work->wait();
  DeviceClock::Mark end = clock ? clock->mark() : nullptr;
  auto done = std::make_shared<at::cuda::CUDAEvent>();
  done->record(comm_);
  return std::make_unique<StreamPending>(device_, std::move(done), begin, end);
}

}  // namespace shardscope::engine
