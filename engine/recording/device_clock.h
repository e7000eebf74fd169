// Where device work really ran, on the host clock. On a GPU, kernels run after the host queued them,
// so host timestamps around a launch say when it was queued, not when it ran. A DeviceClock records
// marks into the device's work queue (CUDA events on the current stream) and reports, once both
// marks of a span have been reached, their times mapped onto trace::nowNs()'s clock. CPU ranks have
// no DeviceClock: their spans are timed on the host. See Note [clock alignment] in
// trace/rank_clock.h, and for the marks around collectives Note [stream ordering] in
// engine/comm/collective_stream.h.
#pragma once

#include <cstdint>
#include <functional>

namespace shardscope::engine {

class DeviceClock {
 public:
  using Mark = void*;
  virtual ~DeviceClock() = default;
  // A point in the current stream's queue (never blocks).
  virtual Mark mark() = 0;
  // Calls `done(beginNs, endNs)` from a background thread once the device has passed both marks;
  // takes ownership of the marks.
  virtual void whenReached(Mark begin, Mark end, std::function<void(int64_t beginNs, int64_t endNs)> done) = 0;
};

// The rank's device clock, or null on CPU ranks. Set once, before training starts.
DeviceClock* deviceClock();
void setDeviceClock(DeviceClock* clock);

}  // namespace shardscope::engine
