#include "engine/cuda/cuda_clock.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "trace/events.h"

#include <c10/cuda/CUDAStream.h>

namespace shardscope::engine {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
  }
}

constexpr auto kPollInterval = std::chrono::milliseconds(2);
constexpr int kPeriodicEvery = 10;  // polls between two periodic calls (about 20 ms)

}  // namespace

CudaClock::CudaClock(int device, std::function<void()> periodic) : device_(device), periodic_(std::move(periodic)) {
  check(cudaSetDevice(device_), "cudaSetDevice");
  check(cudaEventCreate(&anchor_), "cudaEventCreate");
  // The anchor's host time is bracketed by two host reads around an idle device's event; its error
  // is half the bracket (microseconds).
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const int64_t before = trace::nowNs();
  check(cudaEventRecord(anchor_, c10::cuda::getCurrentCUDAStream(device_).stream()), "cudaEventRecord");
  check(cudaEventSynchronize(anchor_), "cudaEventSynchronize");
  const int64_t after = trace::nowNs();
  anchorNs_ = before + (after - before) / 2;
  poller_ = std::thread([this] { pollLoop(); });
}

CudaClock::~CudaClock() {
  running_.store(false);
  if (poller_.joinable()) poller_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& p : pending_) {
    cudaEventDestroy(p.begin);
    cudaEventDestroy(p.end);
  }
  for (auto e : pool_) cudaEventDestroy(e);
  cudaEventDestroy(anchor_);
}

cudaEvent_t CudaClock::takeEvent() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pool_.empty()) {
      cudaEvent_t e = pool_.back();
      pool_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}

void CudaClock::giveBack(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(mutex_);
  pool_.push_back(event);
}

DeviceClock::Mark CudaClock::mark() {
  cudaEvent_t e = takeEvent();
  check(cudaEventRecord(e, c10::cuda::getCurrentCUDAStream(device_).stream()), "cudaEventRecord");
  return e;
}

void CudaClock::whenReached(Mark begin, Mark end, std::function<void(int64_t, int64_t)> done) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back({static_cast<cudaEvent_t>(begin), static_cast<cudaEvent_t>(end), std::move(done)});
}

int64_t CudaClock::hostTimeOf(cudaEvent_t event) const {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, anchor_, event), "cudaEventElapsedTime");
  return anchorNs_ + static_cast<int64_t>(static_cast<double>(ms) * 1e6);
}

bool CudaClock::resolveReady() {
  for (;;) {
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pending_.empty()) return false;
      // Spans are queued in launch order on streams that run in order; the front is the oldest.
      // A span on another stream may finish first and simply waits its turn here.
      if (cudaEventQuery(pending_.front().end) != cudaSuccess) return true;
      if (cudaEventQuery(pending_.front().begin) != cudaSuccess) return true;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    const int64_t beginNs = hostTimeOf(p.begin);
    const int64_t endNs = hostTimeOf(p.end);
    giveBack(p.begin);
    giveBack(p.end);
    p.done(beginNs, endNs);
  }
}

void CudaClock::pollLoop() {
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  cudaSetDevice(device_);
  int polls = 0;
  while (running_.load()) {
    resolveReady();
    if (periodic_ && ++polls % kPeriodicEvery == 0) periodic_();
    std::this_thread::sleep_for(kPollInterval);
  }
  // Whatever the device has finished by now still reaches the trace (a failing run keeps it).
  resolveReady();
  if (periodic_) periodic_();
}

}  // namespace shardscope::engine
