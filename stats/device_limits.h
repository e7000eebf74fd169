// The two figures a device sets for the views: its memory (the capacity line and headroom) and its
// peak FLOP/s (MFU). The user may state them (--gpu-memory, --peak-tflops); otherwise a GPU rank
// reports its own in its RunInfo event: the memory the driver gives, the peak a matmul measured in
// the run's compute dtype (engine/cuda/cuda_matmul_peak.h). A CPU has neither: stated only.
#pragma once

#include <cstdint>
#include <string>

#include "trace/events.h"
#include "config/run_config.h"

namespace shardscope::stats {

// What a GPU rank reported of its device; all zero on CPU ranks and for older recordings.
struct DeviceFacts {
  int64_t memoryBytes = 0;
  double peakFlops = 0;  // 0 also where the GPU was shared by several ranks (not measured)
};

DeviceFacts deviceFactsOf(const trace::Event& runInfo);

// What the views use: the user's figure where stated, else the device's own; 0 for none. The
// notes say which, for the tables' footnotes and tooltips.
struct DeviceLimits {
  double capacityBytes = 0;
  double peakFlops = 0;
  std::string capacityNote;  // e.g. "--gpu-memory 80 GB" or "the device's own 143.8 GB"
  std::string peakNote;      // e.g. "the stated peak, --peak-tflops 989" or "the peak measured ..."
};

DeviceLimits deviceLimitsOf(const config::RunConfig& config, const DeviceFacts& device);

}  // namespace shardscope::stats
