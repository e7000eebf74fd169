#include "trace/stream_merger.h"

#include <algorithm>

namespace shardscope::trace {

StreamMerger::StreamMerger(int ranks, int64_t windowNs, Sink sink)
    : windowNs_(windowNs),
      sink_(std::move(sink)),
      latest_(static_cast<size_t>(ranks), INT64_MIN),
      finished_(static_cast<size_t>(ranks), false) {}

int64_t StreamMerger::timeOf(const Event& e) {
  // Spans are ordered by their start; everything else by its single timestamp.
  return e.beginNs;
}

void StreamMerger::push(Event event) {
  const int64_t t = timeOf(event);
  if (event.rank >= 0 && event.rank < static_cast<int>(latest_.size())) {
    latest_[event.rank] = std::max(latest_[event.rank], t);
  }
  if (t < lastReleased_) {
    ++outOfOrder_;
    sink_(event);
    return;
  }
  uint64_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
    storage_[slot] = std::move(event);
  } else {
    slot = storage_.size();
    storage_.push_back(std::move(event));
  }
  // Ties keep arrival order: the sequence number breaks them.
  heap_.push({t, (sequence_++ << 24) | slot});
  release();
}

void StreamMerger::finishRank(int rank) {
  if (rank >= 0 && rank < static_cast<int>(finished_.size())) finished_[rank] = true;
  release();
}

void StreamMerger::release() {
  int64_t watermark = INT64_MAX;
  for (size_t r = 0; r < latest_.size(); ++r) {
    if (!finished_[r]) watermark = std::min(watermark, latest_[r]);
  }
  if (watermark != INT64_MAX) watermark = watermark == INT64_MIN ? INT64_MIN : watermark - windowNs_;
  while (!heap_.empty() && heap_.top().first <= watermark) {
    const uint64_t slot = heap_.top().second & ((1ULL << 24) - 1);
    lastReleased_ = std::max(lastReleased_, heap_.top().first);
    heap_.pop();
    sink_(storage_[slot]);
    freeSlots_.push_back(slot);
  }
}

void StreamMerger::flush() {
  while (!heap_.empty()) {
    const uint64_t slot = heap_.top().second & ((1ULL << 24) - 1);
    lastReleased_ = std::max(lastReleased_, heap_.top().first);
    heap_.pop();
    sink_(storage_[slot]);
    freeSlots_.push_back(slot);
  }
}

}  // namespace shardscope::trace
