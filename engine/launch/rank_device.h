// What a GPU rank sets up before it creates any tensor: its device, the CUDA allocator hook (memory
// by role, allocator cache, runtime lane) and the device clock (CUDA-event timing); torn down, after
// training, in the reverse order. Only CUDA builds implement it; elsewhere setupCudaRank throws an
// error that says to use --device cpu.
#pragma once

#include <memory>
#include <string>

#include <ATen/ATen.h>

#include "engine/comm/collective_stream.h"

namespace shardscope::engine {

// How several ranks of one NCCL communicator share a GPU, which NCCL refuses by default.
enum class SharedGpuMethod {
  None,           // one rank per GPU
  HostIdPerRank,  // a distinct NCCL_HOSTID per rank: NCCL treats them as separate hosts (sockets
                  // on loopback); works with any NCCL
  MultiRankGpu,   // NCCL_MULTI_RANK_GPU_ENABLE=1: NCCL 2.30+'s own (experimental) support
};

// How ranks are placed on GPUs: one GPU each where there are enough, else several ranks per GPU.
struct GpuPlacement {
  int gpus = 0;        // visible GPUs
  int gpu = 0;         // this rank's GPU
  int ranksOnGpu = 1;  // ranks sharing this rank's GPU (this one included)
  SharedGpuMethod sharing = SharedGpuMethod::None;
  int ncclVersion = 0;           // NCCL_VERSION_CODE of the loaded NCCL (e.g. 22809), 0 if unknown
  std::string describe() const;  // e.g. "cuda:0, 4 ranks on one GPU (a distinct NCCL_HOSTID ...)"
};

// Rank r of `world` goes to GPU r % gpus (torchrun's LOCAL_RANK convention).
GpuPlacement placeOnGpu(int localRank, int world, int gpus);

// The method for ranksOnGpu > 1: NCCL_MULTI_RANK_GPU_ENABLE where the NCCL has it (2.30+), else a
// host identity per rank. `forced` is SHARDSCOPE_SHARED_GPU (hostid | multirank; null or empty:
// choose). Throws, naming the value and the fix, for an unknown or impossible choice.
SharedGpuMethod chooseSharedGpuMethod(int ranksOnGpu, int ncclVersion, const char* forced);

// "2.28.9" from a version code (major*10000 + minor*100 + patch since NCCL 2.9); "unknown" for 0.
std::string ncclVersionString(int code);

// The version of the NCCL this process has loaded (with LibTorch's CUDA libraries), 0 if none.
int loadedNcclVersion();

class RankDevice {
 public:
  virtual ~RankDevice() = default;
  virtual at::Device device() const = 0;
  virtual const GpuPlacement& placement() const = 0;
  // The communication stream for this rank's collectives.
  virtual std::unique_ptr<CollectiveStream> makeCollectiveStream() const = 0;
  // Whether the device_runtime lane has a per-process source, and if not, why.
  virtual std::string runtimeLaneNote() const = 0;
  // What the device says of itself, the defaults for a capacity line and for MFU when the user
  // states neither: its memory, and the matmul FLOP/s measured in the run's compute dtype before
  // training (cuda_matmul_peak.h); 0 when the GPU is shared by several ranks, which would measure
  // each other.
  virtual int64_t totalMemoryBytes() const = 0;
  virtual double measuredPeakFlops() const = 0;
};

// `instrumented` false (--recording off): neither the allocator hook nor the device clock (no
// CUDA events, no polling thread, no NVML samples), so a run measures training alone.
// `computeDtype`: the dtype the peak is measured in (the run's matmuls').
std::unique_ptr<RankDevice> setupCudaRank(const GpuPlacement& placement, bool instrumented,
                                          at::ScalarType computeDtype);

// Visible CUDA devices (0 when LibTorch has no CUDA or no GPU is present).
int visibleCudaDevices();

}  // namespace shardscope::engine
