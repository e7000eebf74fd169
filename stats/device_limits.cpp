#include "stats/device_limits.h"

#include <cstdio>

#include "trace/format.h"

namespace shardscope::stats {

DeviceFacts deviceFactsOf(const trace::Event& runInfo) {
  DeviceFacts facts;
  if (runInfo.kind != trace::EventKind::RunInfo) return facts;
  facts.memoryBytes = runInfo.deviceMemoryBytes > 0 ? runInfo.deviceMemoryBytes : 0;
  facts.peakFlops = runInfo.peakFlopsPerSecond > 0 ? static_cast<double>(runInfo.peakFlopsPerSecond) : 0.0;
  return facts;
}

DeviceLimits deviceLimitsOf(const config::RunConfig& config, const DeviceFacts& device) {
  DeviceLimits limits;
  char text[160];
  if (config.gpuMemoryGB > 0) {
    limits.capacityBytes = config.gpuMemoryGB * 1e9;
    limits.capacityNote = "--gpu-memory " + trace::formatDecimalGB(limits.capacityBytes);
  } else if (device.memoryBytes > 0) {
    limits.capacityBytes = static_cast<double>(device.memoryBytes);
    limits.capacityNote =
        "the device's own " + trace::formatDecimalGB(limits.capacityBytes) + " (--gpu-memory to state another)";
  }
  if (config.peakTflops > 0) {
    limits.peakFlops = config.peakTflops * 1e12;
    std::snprintf(text, sizeof text, "the stated peak, --peak-tflops %g", config.peakTflops);
    limits.peakNote = text;
  } else if (device.peakFlops > 0) {
    limits.peakFlops = device.peakFlops;
    std::snprintf(text, sizeof text, "the peak measured on rank 0's GPU before training, %.4g TFLOP/s (%s matmul)",
                  device.peakFlops / 1e12, config::modeName(config.precision));
    limits.peakNote = text;
  }
  return limits;
}

}  // namespace shardscope::stats
