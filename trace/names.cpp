#include "trace/names.h"

#include <algorithm>
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

constexpr uint32_t kKeptForProcess = UINT32_MAX;  // a name's holders when internName kept it

}  // namespace

class NameTable {
 public:
  NameTable() { holders_[store("")] = kKeptForProcess; }

  NameId intern(std::string_view name) {
    std::lock_guard<std::mutex> lock(mutex_);
    const NameId id = find(name);
    holders_[id] = kKeptForProcess;
    return id;
  }

  NameId intern(std::string_view name, NameHolder& holder) {
    std::lock_guard<std::mutex> lock(mutex_);
    const NameId id = find(name);
    if (!holder.holds(id)) {
      addHolder(id);
      holder.add(id);
    }
    return id;
  }

  // One more holder of each of `ids`, all held now.
  void acquire(const std::vector<NameId>& ids) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (NameId id : ids) addHolder(id);
  }

  // One holder fewer of each of `ids`; a name none holds then is let go.
  void release(const std::vector<NameId>& ids) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (NameId id : ids) {
      uint32_t& holders = holders_[id];
      if (holders == kKeptForProcess || --holders > 0) continue;
      ids_.erase(std::string_view(slot(id)));
      std::string().swap(slot(id));
      free_.push_back(id);
    }
  }

  const std::string& name(NameId id) const {
    const std::string* chunk = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
    return chunk[id & (kChunkSize - 1)];
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_.size();
  }

  bool has(std::string_view name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_.count(name) > 0;
  }

 private:
  // Under the lock, from here on.
  std::string& slot(NameId id) { return owned_[id >> kChunkBits][id & (kChunkSize - 1)]; }

  void addHolder(NameId id) {
    if (holders_[id] != kKeptForProcess) ++holders_[id];
  }

  NameId find(std::string_view name) {
    const auto found = ids_.find(name);
    return found != ids_.end() ? found->second : store(name);
  }

  // A new name, in the slot of one let go where there is one (no holder knows its id now).
  NameId store(std::string_view name) {
    NameId id = 0;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<NameId>(holders_.size());
      const size_t chunk = id >> kChunkBits;
      if (chunk >= kMaxChunks) throw std::length_error("more than 67 million distinct span names");
      if (id % kChunkSize == 0) {
        owned_[chunk] = std::make_unique<std::string[]>(kChunkSize);
        chunks_[chunk].store(owned_[chunk].get(), std::memory_order_release);
      }
      holders_.push_back(0);
    }
    slot(id) = std::string(name);
    ids_.emplace(std::string_view(slot(id)), id);  // a view into the slot, which never moves
    return id;
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string_view, NameId> ids_;
  std::vector<uint32_t> holders_;  // per id: its holders, or kKeptForProcess
  std::vector<NameId> free_;       // ids of names let go
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

bool nameKept(std::string_view name) { return table().has(name); }

NameHolder::NameHolder(const NameHolder& other) : ids_(other.ids_), held_(other.held_) {
  if (!ids_.empty()) table().acquire(ids_);
}

NameHolder& NameHolder::operator=(const NameHolder& other) {
  if (this != &other) *this = NameHolder(other);
  return *this;
}

NameHolder::NameHolder(NameHolder&& other) noexcept : ids_(std::move(other.ids_)), held_(std::move(other.held_)) {
  other.ids_.clear();
  other.held_.clear();
}

NameHolder& NameHolder::operator=(NameHolder&& other) noexcept {
  if (this != &other) {
    if (!ids_.empty()) table().release(ids_);
    ids_ = std::move(other.ids_);
    held_ = std::move(other.held_);
    other.ids_.clear();
    other.held_.clear();
  }
  return *this;
}

NameHolder::~NameHolder() {
  if (!ids_.empty()) table().release(ids_);
}

NameId NameHolder::intern(std::string_view name) { return name.empty() ? kEmptyName : table().intern(name, *this); }

void NameHolder::hold(NameId id) {
  if (id == kEmptyName || holds(id)) return;
  table().acquire({id});
  add(id);
}

void NameHolder::add(NameId id) {
  if (id >= held_.size()) held_.resize(std::max<size_t>(id + 1, held_.size() * 2));
  held_[id] = true;
  ids_.push_back(id);
}

}  // namespace shardscope::trace
