// A GPU's peak, measured: MFU needs "the device's peak FLOP/s", and a datasheet's figure is neither
// what this GPU sustains (clocks, power cap, MIG slice) nor for the dtype the run computes in. A
// square matmul is the closest a model's work gets to the tensor cores' ceiling, so its best rate
// over a few timed repetitions, in the run's compute dtype, is the peak MFU divides by.
#pragma once

#include <ATen/ATen.h>

namespace shardscope::engine {

// FLOP/s of the best of several timed batches of 8192 x 8192 matmuls on `device` in `dtype`. Runs
// before the rank's allocator hook is attached and empties the cache after, so nothing of it shows
// in the rank's memory lanes.
double measureMatmulPeakFlops(c10::DeviceIndex device, at::ScalarType dtype);

}  // namespace shardscope::engine
