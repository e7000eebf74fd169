#include <gtest/gtest.h>

#include "engine/strategies/gradient_buckets.h"

namespace shardscope::engine {
namespace {

TEST(BucketAssignment, FillsInReverseOrderAndClosesAtTheCap) {
  // Parameters of 400 KiB each; first cap 1 MiB, then 2 MiB.
  const int64_t kib = 1024;
  std::vector<int64_t> bytes(9, 400 * kib);
  auto buckets = assignBuckets(bytes, 1024 * kib, 2048 * kib);
  // The first bucket closes once it reaches 1 MiB (3 x 400 KiB), the next at 2 MiB (6 x 400 KiB).
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0], (std::vector<int>{8, 7, 6}));
  EXPECT_EQ(buckets[1], (std::vector<int>{5, 4, 3, 2, 1, 0}));
  bytes.insert(bytes.begin(), 1);  // one more, first-registered parameter: a bucket of its own
  buckets = assignBuckets(bytes, 1024 * kib, 2048 * kib);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0], (std::vector<int>{9, 8, 7}));
  EXPECT_EQ(buckets[2], (std::vector<int>{0}));
}

TEST(BucketAssignment, EveryParameterExactlyOnce) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 57; ++i) bytes.push_back((i * 7919) % 300000 + 1);
  auto buckets = assignBuckets(bytes, 1 << 20, 1 << 19);
  std::vector<int> seen(bytes.size(), 0);
  int previous = static_cast<int>(bytes.size());
  for (const auto& b : buckets) {
    for (int i : b) {
      ++seen[i];
      EXPECT_LT(i, previous) << "reverse registration order across and within buckets";
      previous = i;
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

// no_shard: a bucket per unit. A gpt's root holds the embeddings (registered first) and the head
// (last): its bucket is complete only once backward reaches the embeddings, so it goes last, after
// the blocks in the order backward finishes them.
TEST(BucketAssignment, OneBucketPerUnitInTheOrderBackwardCompletesThem) {
  const std::vector<int32_t> units = {-1, -1, 0, 0, 1, 1, 1, -1, -1};
  const auto buckets = assignUnitBuckets(units);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0], (std::vector<int>{6, 5, 4}));
  EXPECT_EQ(buckets[1], (std::vector<int>{3, 2}));
  EXPECT_EQ(buckets[2], (std::vector<int>{8, 7, 1, 0}));
}

}  // namespace
}  // namespace shardscope::engine
