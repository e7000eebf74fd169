// A bounded multi-producer / single-consumer queue that never blocks a producer: when it is full,
// tryPush fails and the caller counts a drop. Dmitry Vyukov's bounded MPMC design: every slot has
// a sequence number; a producer claims a position with one CAS and publishes by storing the
// slot's sequence, so producers on different threads never wait on each other or on the consumer.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace shardscope::trace {

template <typename T>
class BoundedEventQueue {
 public:
  // capacity is rounded up to a power of two (at least 2).
  explicit BoundedEventQueue(size_t capacity) {
    size_t c = 2;
    while (c < capacity) c <<= 1;
    mask_ = c - 1;
    slots_ = std::make_unique<Slot[]>(c);
    for (size_t i = 0; i < c; ++i) slots_[i].sequence.store(i, std::memory_order_relaxed);
  }

  size_t capacity() const { return mask_ + 1; }
  // About how many are queued, from any thread (the count may be a moment old).
  size_t approximateSize() const {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    const size_t head = head_.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

  bool tryPush(T value) {
    size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      Slot& slot = slots_[pos & mask_];
      const size_t seq = slot.sequence.load(std::memory_order_acquire);
      const auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          slot.value = std::move(value);
          slot.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // Single consumer.
  bool tryPop(T& out) {
    const size_t pos = head_.load(std::memory_order_relaxed);
    Slot& slot = slots_[pos & mask_];
    const size_t seq = slot.sequence.load(std::memory_order_acquire);
    if (static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos + 1) < 0) return false;
    out = std::move(slot.value);
    slot.sequence.store(pos + mask_ + 1, std::memory_order_release);
    head_.store(pos + 1, std::memory_order_relaxed);
    return true;
  }

 private:
  struct Slot {
    std::atomic<size_t> sequence{0};
    T value{};
  };
  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  alignas(64) std::atomic<size_t> tail_{0};
  alignas(64) std::atomic<size_t> head_{0};  // the consumer's alone; atomic for approximateSize
};

}  // namespace shardscope::trace
