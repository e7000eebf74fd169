#include "engine/recording/recording_allocator.h"

#include <atomic>
#include <optional>

#include <c10/core/CPUAllocator.h>

#include "engine/recording/recorder.h"

namespace shardscope::engine {

namespace {

// Every allocation carries a header in front of its data, so the raw pointer alone leads back to
// its size and role. That keeps context == data, which raw_allocate() users (Gloo, c10d) require,
// and needs no lookup table (no lock) on alloc or free. 64 bytes keeps c10's 64-byte alignment.
struct alignas(64) Header {
  size_t bytes;
  trace::MemoryRole role;
  int32_t unit;              // the model unit the bytes belong to, or trace::kNoUnit
  bool recorded;             // its allocation was recorded, so its free and retags are too
  trace::MemorySpace space;  // Host when made inside a HostMemoryScope
};
static_assert(sizeof(Header) == 64);

c10::DeleterFnPtr gInnerFree = nullptr;  // the wrapped allocator's raw deleter
// LibTorch calls the hooks with no context of ours: they record into the recorder installed with
// them (none before: nothing is recorded).
std::atomic<RankRecorder*> gRecorder{nullptr};

Header* headerOf(void* data) { return reinterpret_cast<Header*>(static_cast<char*>(data) - sizeof(Header)); }

DeviceRetagger gDeviceRetagger = nullptr;
std::atomic<bool> gRecordHost{true};
thread_local bool tHostScope = false;
DeviceUnitAssigner gDeviceUnitAssigner = nullptr;

void recordingFree(void* data) {
  if (!data) return;
  Header* header = headerOf(data);
  if (header->recorded) {
    recordMemoryEvent(-static_cast<int64_t>(header->bytes), header->role, trace::kNoRole, header->unit, header->space);
  }
  gInnerFree(header);
}

// The header of a CPU tensor's storage, or nullptr for memory this hook did not allocate or did
// not record.
Header* recordedHeader(const at::Tensor& tensor) {
  const auto& dataPtr = tensor.storage().data_ptr();
  if (dataPtr.get_deleter() != &recordingFree || !dataPtr.get()) return nullptr;
  Header* header = headerOf(dataPtr.get());
  return header->recorded ? header : nullptr;
}

class RecordingCpuAllocator final : public c10::Allocator {
 public:
  explicit RecordingCpuAllocator(c10::Allocator* inner) : inner_(inner) {
    gInnerFree = inner->raw_deleter();
    TORCH_CHECK(gInnerFree, "the default CPU allocator has no raw deleter to wrap");
  }

  c10::DataPtr allocate(size_t bytes) override {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (bytes == 0) return {nullptr, nullptr, &recordingFree, cpu};
    void* base = inner_->raw_allocate(bytes + sizeof(Header));
    const bool recorded = tHostScope || gRecordHost.load(std::memory_order_relaxed);
    const auto space = tHostScope ? trace::MemorySpace::Host : trace::MemorySpace::Device;
    auto* header = new (base) Header{bytes, currentRole(), currentUnit(), recorded, space};
    void* data = header + 1;
    if (recorded) recordMemoryEvent(static_cast<int64_t>(bytes), header->role, trace::kNoRole, header->unit, space);
    return {data, data, &recordingFree, cpu};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &recordingFree; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  c10::Allocator* inner_;
};

// A pinned block from the CUDA host allocator, wrapped so that its free is recorded: the tensor's
// storage holds this as its context, and the original DataPtr frees the block when this goes.
// CUDA's asynchronous copies find the block by its address, so the other context does not hide it.
struct PinnedBlock {
  c10::DataPtr original;
  int64_t bytes;
  trace::MemoryRole role;
  int32_t unit;
};

void freePinnedBlock(void* context) {
  auto* block = static_cast<PinnedBlock*>(context);
  recordMemoryEvent(-block->bytes, block->role, trace::kNoRole, block->unit, trace::MemorySpace::Host);
  delete block;
}

}  // namespace

HostMemoryScope::HostMemoryScope() : previous_(tHostScope) { tHostScope = true; }
HostMemoryScope::~HostMemoryScope() { tHostScope = previous_; }

at::Tensor emptyHostTensor(at::IntArrayRef sizes, at::ScalarType dtype, bool pinned, const std::string& unitName) {
  HostMemoryScope host;
  if (!pinned) return at::empty(sizes, at::TensorOptions().dtype(dtype));
  at::Tensor tensor;
  {
    std::optional<ComputeSpan> pin;
    if (RankRecorder* recorder = gRecorder.load(std::memory_order_acquire)) {
      pin.emplace(*recorder, trace::ComputeKind::PinHostMemory, unitName);
    }
    tensor = at::empty(sizes, at::TensorOptions().dtype(dtype).pinned_memory(true));
  }
  const c10::Storage& storage = tensor.storage();
  auto* block = new PinnedBlock{{}, static_cast<int64_t>(storage.nbytes()), currentRole(), currentUnit()};
  void* data = storage.data_ptr().get();
  block->original = storage.set_data_ptr(c10::DataPtr(data, block, &freePinnedBlock, storage.device()));
  recordMemoryEvent(block->bytes, block->role, trace::kNoRole, block->unit, trace::MemorySpace::Host);
  return tensor;
}

void setHostMemoryRecorded(bool recorded) { gRecordHost.store(recorded, std::memory_order_relaxed); }

void installRecordingCpuAllocator(RankRecorder& recorder) {
  gRecorder.store(&recorder, std::memory_order_release);
  static RecordingCpuAllocator allocator(c10::GetDefaultCPUAllocator());
  c10::SetCPUAllocator(&allocator, /*priority=*/10);
}

void recordMemoryEvent(int64_t bytes, trace::MemoryRole role, uint8_t fromRole, int32_t unit,
                       trace::MemorySpace space) {
  RankRecorder* installed = gRecorder.load(std::memory_order_acquire);
  if (!installed || !installed->enabled()) return;
  RankRecorder& recorder = *installed;
  trace::Event e;
  e.kind = trace::EventKind::Memory;
  e.step = recorder.step();
  e.beginNs = trace::nowNs();
  e.bytes = bytes;
  e.role = static_cast<uint8_t>(role);
  e.fromRole = fromRole;
  e.unit = unit;
  e.space = static_cast<uint8_t>(space);
  recorder.record(std::move(e));
}

void setDeviceRetagger(DeviceRetagger retagger) { gDeviceRetagger = retagger; }
void setDeviceUnitAssigner(DeviceUnitAssigner assigner) { gDeviceUnitAssigner = assigner; }

void assignUnit(const at::Tensor& tensor, int32_t unit) {
  if (!tensor.defined() || !tensor.has_storage()) return;
  if (!tensor.is_cpu()) {
    if (gDeviceUnitAssigner) gDeviceUnitAssigner(tensor, unit);
    return;
  }
  Header* header = recordedHeader(tensor);
  if (!header || header->unit == unit) return;
  if (header->unit != trace::kNoUnit) {  // taken from the unit it was counted in
    recordMemoryEvent(-static_cast<int64_t>(header->bytes), header->role, static_cast<uint8_t>(header->role),
                      header->unit, header->space);
  }
  recordMemoryEvent(static_cast<int64_t>(header->bytes), header->role, static_cast<uint8_t>(header->role), unit,
                    header->space);
  header->unit = unit;
}

void retagStorage(const at::Tensor& tensor, trace::MemoryRole role) {
  if (!tensor.defined() || !tensor.has_storage()) return;
  if (!tensor.is_cpu()) {
    if (gDeviceRetagger) gDeviceRetagger(tensor, role);
    return;
  }
  Header* header = recordedHeader(tensor);
  if (!header || header->role == role) return;
  recordMemoryEvent(static_cast<int64_t>(header->bytes), role, static_cast<uint8_t>(header->role), header->unit,
                    header->space);
  header->role = role;
}

}  // namespace shardscope::engine
