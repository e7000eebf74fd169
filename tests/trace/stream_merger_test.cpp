#include "trace/stream_merger.h"

#include <gtest/gtest.h>

#include <random>

namespace shardscope::trace {
namespace {

Event at(int rank, int64_t t) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  return e;
}

// Seeded random interleavings of per-rank streams that are sorted except for bounded jitter
// (smaller than the window): the merged stream must hold every event, in time order.
TEST(StreamMerger, RandomInterleavingsComeOutInTimeOrder) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const int ranks = 1 + static_cast<int>(rng() % 8);
    const int64_t window = 1000;
    std::vector<std::vector<Event>> streams(ranks);
    size_t total = 0;
    for (int r = 0; r < ranks; ++r) {
      int64_t t = rng() % 500;
      const int n = 50 + static_cast<int>(rng() % 500);
      for (int i = 0; i < n; ++i) {
        t += rng() % 100;
        const int64_t jitter = static_cast<int64_t>(rng() % 400);  // < window
        streams[r].push_back(at(r, std::max<int64_t>(0, t - jitter)));
      }
      total += streams[r].size();
    }
    std::vector<Event> merged;
    StreamMerger merger(ranks, window, [&](const Event& e) { merged.push_back(e); });
    std::vector<size_t> next(ranks, 0);
    for (size_t sent = 0; sent < total;) {
      const int r = static_cast<int>(rng() % ranks);
      if (next[r] == streams[r].size()) continue;
      merger.push(streams[r][next[r]++]);
      ++sent;
      if (next[r] == streams[r].size()) merger.finishRank(r);
    }
    merger.flush();
    ASSERT_EQ(merged.size(), total) << "seed " << seed;
    EXPECT_EQ(merger.outOfOrder(), 0) << "seed " << seed;
    for (size_t i = 1; i < merged.size(); ++i) {
      ASSERT_LE(merged[i - 1].beginNs, merged[i].beginNs) << "seed " << seed << " at " << i;
    }
  }
}

TEST(StreamMerger, LateEventsAreCountedNotHidden) {
  std::vector<Event> merged;
  StreamMerger merger(2, /*windowNs=*/10, [&](const Event& e) { merged.push_back(e); });
  merger.push(at(0, 100));
  merger.push(at(1, 100));
  merger.push(at(0, 1000));
  merger.push(at(1, 1000));  // releases everything up to 990
  ASSERT_EQ(merged.size(), 2u);
  merger.push(at(1, 50));  // later than what was released: out of order
  EXPECT_EQ(merger.outOfOrder(), 1);
  merger.flush();
  EXPECT_EQ(merged.size(), 5u);
}

TEST(StreamMerger, HoldsEventsUntilEveryLiveRankHasCaughtUp) {
  std::vector<Event> merged;
  StreamMerger merger(2, 0, [&](const Event& e) { merged.push_back(e); });
  merger.push(at(0, 10));
  merger.push(at(0, 20));
  EXPECT_TRUE(merged.empty()) << "rank 1 may still send something earlier";
  merger.finishRank(1);
  EXPECT_EQ(merged.size(), 2u);
}

}  // namespace
}  // namespace shardscope::trace
