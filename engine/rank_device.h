// What a GPU rank sets up before it creates any tensor: its device, the CUDA allocator hook (memory
// by role, allocator cache, runtime lane) and the device clock (CUDA-event timing); torn down, after
// training, in the reverse order. Only CUDA builds implement it; elsewhere setupCudaRank throws an
// error that says to use --device cpu.
#pragma once

#include <memory>
#include <string>

#include <ATen/ATen.h>

#include "engine/collective_stream.h"

namespace shardscope {

// How ranks are placed on GPUs: one GPU each where there are enough, else several ranks per GPU.
struct GpuPlacement {
  int gpus = 0;          // visible GPUs
  int gpu = 0;           // this rank's GPU
  int ranksOnGpu = 1;    // ranks sharing this rank's GPU (this one included)
  std::string describe() const;  // e.g. "cuda:0, 4 ranks on 1 GPU (NCCL over sockets)"
};

// Rank r of `world` goes to GPU r % gpus (torchrun's LOCAL_RANK convention).
GpuPlacement placeOnGpu(int localRank, int world, int gpus);

class RankDevice {
 public:
  virtual ~RankDevice() = default;
  virtual at::Device device() const = 0;
  virtual const GpuPlacement& placement() const = 0;
  // The communication stream for this rank's collectives.
  virtual std::unique_ptr<CollectiveStream> makeCollectiveStream() const = 0;
  // Whether the device_runtime lane has a per-process source, and if not, why.
  virtual std::string runtimeLaneNote() const = 0;
};

std::unique_ptr<RankDevice> setupCudaRank(const GpuPlacement& placement);

// Visible CUDA devices (0 when LibTorch has no CUDA or no GPU is present).
int visibleCudaDevices();

}  // namespace shardscope
