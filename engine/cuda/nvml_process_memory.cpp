#include "engine/cuda/nvml_process_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace shardscope::engine {

namespace {

// The NVML ABI pieces used here (nvml.h, stable since driver 510).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
using InitFn = int (*)();
using HandleByBusIdFn = int (*)(const char*, void**);
using ProcessesFn = int (*)(void*, unsigned int*, NvmlProcessInfo*);
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;

struct Nvml {
  HandleByBusIdFn handleByBusId = nullptr;
  ProcessesFn processes = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return n;
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    n.handleByBusId = reinterpret_cast<HandleByBusIdFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.processes = reinterpret_cast<ProcessesFn>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    n.ok = init && n.handleByBusId && n.processes && init() == kNvmlSuccess;
    return n;
  }();
  return loaded;
}

}  // namespace

NvmlProcessMemory::NvmlProcessMemory(const std::string& pciBusId) {
  const Nvml& n = nvml();
  void* device = nullptr;
  if (n.ok && n.handleByBusId(pciBusId.c_str(), &device) == kNvmlSuccess) device_ = device;
}

std::optional<int64_t> NvmlProcessMemory::bytesOfThisProcess() const {
  if (!device_) return std::nullopt;
  std::vector<NvmlProcessInfo> infos(32);
  unsigned int count = static_cast<unsigned int>(infos.size());
  int status = nvml().processes(device_, &count, infos.data());
  if (status == kNvmlInsufficientSize) {
    infos.resize(count + 8);
    count = static_cast<unsigned int>(infos.size());
    status = nvml().processes(device_, &count, infos.data());
  }
  if (status != kNvmlSuccess) return std::nullopt;
  const auto pid = static_cast<unsigned int>(::getpid());
  for (unsigned int i = 0; i < count; ++i) {
    // NVML reports "not available" as all ones (e.g. inside some virtual machines).
    if (infos[i].pid == pid && infos[i].usedGpuMemory != ~0ULL) {
      return static_cast<int64_t>(infos[i].usedGpuMemory);
    }
  }
  return std::nullopt;
}

}  // namespace shardscope::engine
