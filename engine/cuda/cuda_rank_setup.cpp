#include <cstdlib>
#include <string>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/cuda.h>

#include "engine/cuda/cublas_warmup.h"
#include "engine/cuda/cuda_clock.h"
#include "engine/cuda/cuda_collective_stream.h"
#include "engine/cuda/cuda_matmul_peak.h"
#include "engine/cuda/cuda_memory_tracker.h"
#include "engine/recording/recording_allocator.h"
#include "engine/launch/rank_device.h"

namespace shardscope::engine {

namespace {

// SHARDSCOPE_NCCL_KERNEL_STREAM=own|process_group: where NCCL kernels run (CudaCollectiveStream).
// A diagnostic knob for comparing the two on a shared GPU; not a user option.
CudaCollectiveStream::KernelStream kernelStreamFromEnvironment() {
  const char* value = std::getenv("SHARDSCOPE_NCCL_KERNEL_STREAM");
  if (value && std::string(value) == "own") return CudaCollectiveStream::KernelStream::Own;
  return CudaCollectiveStream::KernelStream::ProcessGroups;
}

class CudaRankDevice final : public RankDevice {
 public:
  CudaRankDevice(const GpuPlacement& placement, bool instrumented, at::ScalarType computeDtype)
      : placement_(placement) {
    const auto index = static_cast<c10::DeviceIndex>(placement.gpu);
    c10::cuda::set_device(index);
    // Initialise CUDA and the caching allocator, then hook the allocator, so the hook sees every
    // block this rank ever allocates; the peak is measured before, and its blocks released.
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    totalMemoryBytes_ = static_cast<int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
    if (placement.ranksOnGpu == 1) measuredPeakFlops_ = measureMatmulPeakFlops(index, computeDtype);
    if (!instrumented) return;
    attachCudaMemoryTracker(placement.gpu, placement.ranksOnGpu > 1);
    setHostMemoryRecorded(false);  // the lanes are the device's memory from here on
    makeCublasWorkspacesAsOther(index, computeDtype);
    clock_ = std::make_unique<CudaClock>(placement.gpu, [] { sampleDeviceRuntimeMemory(); });
    setDeviceClock(clock_.get());
  }
  ~CudaRankDevice() override {
    // The clock's last poll resolves what the device has finished: a failing run keeps it.
    setDeviceClock(nullptr);
    clock_.reset();
  }

  at::Device device() const override { return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(placement_.gpu)); }
  const GpuPlacement& placement() const override { return placement_; }
  std::unique_ptr<CollectiveStream> makeCollectiveStream() const override {
    return std::make_unique<CudaCollectiveStream>(static_cast<c10::DeviceIndex>(placement_.gpu),
                                                  kernelStreamFromEnvironment());
  }
  std::string runtimeLaneNote() const override {
    return deviceRuntimeMemoryAvailable()
               ? ""
               : "device_runtime lane empty: NVML lists no per-process memory here and the GPU "
                 "is shared, so whole-device figures would count other ranks";
  }

  int64_t totalMemoryBytes() const override { return totalMemoryBytes_; }
  double measuredPeakFlops() const override { return measuredPeakFlops_; }

 private:
  GpuPlacement placement_;
  int64_t totalMemoryBytes_ = 0;
  double measuredPeakFlops_ = 0;
  std::unique_ptr<CudaClock> clock_;
};

}  // namespace

std::unique_ptr<RankDevice> setupCudaRank(const GpuPlacement& placement, bool instrumented,
                                          at::ScalarType computeDtype) {
  return std::make_unique<CudaRankDevice>(placement, instrumented, computeDtype);
}

int visibleCudaDevices() { return static_cast<int>(torch::cuda::device_count()); }

}  // namespace shardscope::engine
