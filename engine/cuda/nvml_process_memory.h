// How much device memory this process holds on its GPU, as the driver counts it (what nvidia-smi
// shows per process). Read through NVML, loaded at run time (libnvidia-ml ships with the driver, not
// the toolkit), so a build needs no NVML headers or link. When several rank processes share one
// GPU this is the only per-process figure; cudaMemGetInfo counts the whole device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardscope::engine {

class NvmlProcessMemory {
 public:
  // `pciBusId` as cudaDeviceGetPCIBusId writes it. available() is false if NVML cannot be loaded
  // or does not know the device.
  explicit NvmlProcessMemory(const std::string& pciBusId);
  bool available() const { return device_ != nullptr; }
  // Bytes this process (getpid()) holds on the device, or nothing if NVML does not list it.
  std::optional<int64_t> bytesOfThisProcess() const;

 private:
  void* device_ = nullptr;  // nvmlDevice_t
};

}  // namespace shardscope::engine
