// DeviceClock on CUDA events. Anchoring: with the device idle, one event is recorded and waited
// for, and the host time of that moment is kept; any later event's host time is the anchor's plus
// cudaEventElapsedTime(anchor, event). A background thread polls pending spans in the order they
// were queued (cudaEventQuery never blocks), so the training thread never waits for the GPU to
// learn a span's times. The same thread runs `periodic` every few milliseconds (device memory
// sampling), so one thread serves all of a rank's GPU bookkeeping.
// Limit: cudaEventElapsedTime returns float milliseconds from the one anchor, so resolution falls
// with the run's length (about 8 µs two minutes in, 60 µs after fifteen). Re-anchoring needs an
// event known to precede every pending one on all streams; not done yet.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/recording/device_clock.h"

namespace shardscope::engine {

class CudaClock final : public DeviceClock {
 public:
  // Anchors on `device` (synchronizes it once) and starts the polling thread.
  CudaClock(int device, std::function<void()> periodic);
  ~CudaClock() override;  // resolves what the device has finished, then stops

  Mark mark() override;
  void whenReached(Mark begin, Mark end, std::function<void(int64_t beginNs, int64_t endNs)> done) override;

  // The host time of an event the device has passed.
  int64_t hostTimeOf(cudaEvent_t event) const;

 private:
  struct Pending {
    cudaEvent_t begin;
    cudaEvent_t end;
    std::function<void(int64_t, int64_t)> done;
  };
  void pollLoop();
  bool resolveReady();  // resolves finished spans in queue order; true if any remain
  cudaEvent_t takeEvent();
  void giveBack(cudaEvent_t event);

  int device_;
  cudaEvent_t anchor_ = nullptr;
  int64_t anchorNs_ = 0;
  std::function<void()> periodic_;
  std::mutex mutex_;  // guards pending_ and pool_: held for a push or a pop, never across CUDA waits
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> pool_;
  std::atomic<bool> running_{true};
  std::thread poller_;
};

}  // namespace shardscope::engine
