// Merges the event streams of many ranks, arriving interleaved in any order, into one stream in
// time order, after Perfetto's windowed TraceSorter: each rank's stream is mostly sorted, so an
// event can be released once every live rank has sent something at least `windowNs` later.
// Events that arrive after something later was already released are counted as out of order and
// released immediately, never hidden. Complexity: O(log n) per event.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "trace/events.h"

namespace shardscope::trace {

class StreamMerger {
 public:
  using Sink = std::function<void(const Event&)>;
  StreamMerger(int ranks, int64_t windowNs, Sink sink);

  void push(Event event);
  void finishRank(int rank);  // the rank sends nothing more
  void flush();               // release everything held

  int64_t outOfOrder() const { return outOfOrder_; }
  size_t held() const { return heap_.size(); }

 private:
  static int64_t timeOf(const Event& e);
  void release();

  struct Later {
    bool operator()(const std::pair<int64_t, uint64_t>& a, const std::pair<int64_t, uint64_t>& b) const {
      return a > b;
    }
  };
  int64_t windowNs_;
  Sink sink_;
  std::vector<int64_t> latest_;  // latest timestamp seen per rank
  std::vector<bool> finished_;
  std::vector<Event> storage_;  // heap payloads by sequence
  std::vector<uint64_t> freeSlots_;
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>, Later> heap_;
  uint64_t sequence_ = 0;
  int64_t lastReleased_ = INT64_MIN;
  int64_t outOfOrder_ = 0;
};

}  // namespace shardscope::trace
