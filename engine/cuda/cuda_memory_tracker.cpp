#include "engine/cuda/cuda_memory_tracker.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <c10/cuda/CUDACachingAllocator.h>

#include "engine/cuda/nvml_process_memory.h"
#include "engine/recording/recorder.h"
#include "engine/recording/recording_allocator.h"

namespace shardscope::engine {

namespace {

using c10::CachingDeviceAllocator::TraceEntry;
using trace::MemoryRole;

struct Block {
  int64_t bytes;
  MemoryRole role;
  int32_t unit;  // the model unit, or trace::kNoUnit
};

struct TrackerState {
  int device = 0;
  bool sharesGpu = false;
  // Live allocations by address. The allocator calls the hook under its own lock; this mutex is
  // only ever taken inside that lock or alone (retag), so the two cannot deadlock.
  std::mutex mutex;
  std::unordered_map<size_t, Block> live;
  std::atomic<int64_t> reserved{0};
  int64_t runtimeRecorded = 0;  // the device_runtime lane's current value (clock thread only)
  std::unique_ptr<NvmlProcessMemory> nvml;
};

TrackerState& state() {
  static TrackerState* s = new TrackerState();  // the allocator may call the hook at exit
  return *s;
}

void onTrace(const TraceEntry& te) {
  TrackerState& s = state();
  if (te.device_ != s.device) return;
  const auto size = static_cast<int64_t>(te.size_);
  switch (te.action_) {
    case TraceEntry::ALLOC: {
      const MemoryRole role = currentRole();
      const int32_t unit = currentUnit();
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.live[te.addr_] = Block{size, role, unit};
      }
      recordMemoryEvent(size, role, static_cast<uint8_t>(MemoryRole::AllocatorCache), unit);
      break;
    }
    case TraceEntry::FREE_COMPLETED: {
      Block block{0, MemoryRole::Other, trace::kNoUnit};
      {
        std::lock_guard<std::mutex> lock(s.mutex);
        auto it = s.live.find(te.addr_);
        if (it == s.live.end()) return;  // allocated before the hook was attached
        block = it->second;
        s.live.erase(it);
      }
      recordMemoryEvent(block.bytes, MemoryRole::AllocatorCache, static_cast<uint8_t>(block.role), block.unit);
      break;
    }
    case TraceEntry::SEGMENT_ALLOC:
    case TraceEntry::SEGMENT_MAP:
      s.reserved.fetch_add(size);
      recordMemoryEvent(size, MemoryRole::AllocatorCache);
      break;
    case TraceEntry::SEGMENT_FREE:
    case TraceEntry::SEGMENT_UNMAP:
      s.reserved.fetch_sub(size);
      recordMemoryEvent(-size, MemoryRole::AllocatorCache);
      break;
    default:
      break;  // FREE_REQUESTED (the free completes later), SNAPSHOT, OOM
  }
}

void retagCuda(const at::Tensor& tensor, MemoryRole role) {
  TrackerState& s = state();
  const auto addr = reinterpret_cast<size_t>(tensor.storage().data_ptr().get());
  MemoryRole from;
  int64_t bytes = 0;
  int32_t unit = trace::kNoUnit;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.live.find(addr);
    if (it == s.live.end() || it->second.role == role) return;
    from = it->second.role;
    bytes = it->second.bytes;
    unit = it->second.unit;
    it->second.role = role;
  }
  recordMemoryEvent(bytes, role, static_cast<uint8_t>(from), unit);
}

// The CUDA side of assignUnit (recording_allocator.h).
void assignUnitCuda(const at::Tensor& tensor, int32_t unit) {
  TrackerState& s = state();
  const auto addr = reinterpret_cast<size_t>(tensor.storage().data_ptr().get());
  Block block{0, MemoryRole::Other, trace::kNoUnit};
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.live.find(addr);
    if (it == s.live.end() || it->second.unit == unit) return;
    block = it->second;
    it->second.unit = unit;
  }
  const auto role = static_cast<uint8_t>(block.role);
  if (block.unit != trace::kNoUnit) recordMemoryEvent(-block.bytes, block.role, role, block.unit);
  recordMemoryEvent(block.bytes, block.role, role, unit);
}

std::optional<int64_t> processDeviceBytes() {
  TrackerState& s = state();
  if (s.nvml && s.nvml->available()) {
    if (auto bytes = s.nvml->bytesOfThisProcess()) return bytes;
  }
  if (s.sharesGpu) return std::nullopt;  // whole-device figures would count the other ranks
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) return std::nullopt;
  return static_cast<int64_t>(totalBytes - freeBytes);
}

}  // namespace

void attachCudaMemoryTracker(int device, bool sharesGpu) {
  TrackerState& s = state();
  s.device = device;
  s.sharesGpu = sharesGpu;
  char busId[64] = {0};
  if (cudaDeviceGetPCIBusId(busId, sizeof(busId), device) == cudaSuccess) {
    s.nvml = std::make_unique<NvmlProcessMemory>(busId);
  }
  c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(&onTrace);
  setDeviceRetagger(&retagCuda);
  setDeviceUnitAssigner(&assignUnitCuda);
}

bool deviceRuntimeMemoryAvailable() {
  TrackerState& s = state();
  return (s.nvml && s.nvml->available()) || !s.sharesGpu;
}

void sampleDeviceRuntimeMemory() {
  TrackerState& s = state();
  auto used = processDeviceBytes();
  if (!used) return;
  const int64_t runtime = std::max<int64_t>(0, *used - s.reserved.load());
  if (runtime == s.runtimeRecorded) return;
  recordMemoryEvent(runtime - s.runtimeRecorded, MemoryRole::DeviceRuntime);
  s.runtimeRecorded = runtime;
}

}  // namespace shardscope::engine
