#include "trace/names.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace shardscope::trace {

namespace {

// Names sit in chunks that never move; the chunk table is fixed, so a reader indexes it without
// a lock while a writer adds chunks. 2^14 chunks of 2^12 names: 67 million distinct names.
constexpr size_t kChunkBits = 12;
constexpr size_t kChunkSize = size_t{1} << kChunkBits;
constexpr size_t kMaxChunks = size_t{1} << 14;

}  // namespace

class NameTable {
 public:
  NameTable() { store(""); }

  NameId intern(std::string_view name) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = ids_.find(std::string(name));
    if (found != ids_.end()) return found->second;
    return store(name);
  }

  const std::string& name(NameId id) const {
    const std::string* chunk = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
    return chunk[id & (kChunkSize - 1)];
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_.size();
  }

 private:
  // Under the lock.
  NameId store(std::string_view name) {
    const size_t id = ids_.size();
    const size_t chunk = id >> kChunkBits;
    if (chunk >= kMaxChunks) throw std::length_error("more than 67 million distinct span names");
    if (id % kChunkSize == 0) {
      owned_[chunk] = std::make_unique<std::string[]>(kChunkSize);
      chunks_[chunk].store(owned_[chunk].get(), std::memory_order_release);
    }
    owned_[chunk][id & (kChunkSize - 1)] = std::string(name);
    ids_.emplace(std::string(name), static_cast<NameId>(id));
    return static_cast<NameId>(id);
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, NameId> ids_;
  std::array<std::unique_ptr<std::string[]>, kMaxChunks> owned_;
  std::array<std::atomic<const std::string*>, kMaxChunks> chunks_{};
};

namespace {

std::atomic<NameTable*> handedOver{nullptr};

NameTable& table() {
  if (NameTable* shared = handedOver.load(std::memory_order_acquire)) return *shared;
  static NameTable* own = new NameTable();  // never destroyed: spans may be read during exit
  return *own;
}

}  // namespace

NameTable* namesInUse() { return &table(); }

void useNames(NameTable* shared) { handedOver.store(shared, std::memory_order_release); }

NameId internName(std::string_view name) { return name.empty() ? kEmptyName : table().intern(name); }

const std::string& nameOf(NameId id) { return table().name(id); }

size_t internedNames() { return table().size(); }

}  // namespace shardscope::trace
