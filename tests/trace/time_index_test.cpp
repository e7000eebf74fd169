// The two-level forward search against the obvious scan, on times with long runs of equal values
// and gaps, from every starting place, across block boundaries and at the ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "trace/time_index.h"

namespace shardscope::trace {
namespace {

size_t scanLastAtOrBefore(const std::vector<int64_t>& times, size_t from, double t) {
  size_t last = from;
  for (size_t i = from + 1; i < times.size() && static_cast<double>(times[i]) <= t; ++i) last = i;
  return last;
}

size_t scanLastBefore(const std::vector<int64_t>& times, size_t from, double t) {
  size_t last = from;
  for (size_t i = from + 1; i < times.size() && static_cast<double>(times[i]) < t; ++i) last = i;
  return last;
}

// `count` times from 1000 on, in steps of 0 to 30 (a gap of 0: equal times, as samples share one),
// pushed into `index`.
std::vector<int64_t> randomTimes(unsigned seed, int count, TimeIndex& index) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> gap(0, 3);
  std::vector<int64_t> times;
  int64_t t = 1000;
  for (int n = 0; n < count; ++n) {
    t += gap(rng) == 0 ? 0 : gap(rng) * 10;
    times.push_back(t);
    index.push(t);
  }
  return times;
}

TEST(TimeIndex, AgreesWithAScanFromEveryPlace) {
  TimeIndex index;
  const std::vector<int64_t> times = randomTimes(11, 700, index);
  const int64_t t = times.back();
  ASSERT_EQ(index.size(), times.size());
  for (size_t from = 0; from < times.size(); from += 3) {
    for (double query = static_cast<double>(times[from]) - 5; query <= static_cast<double>(t) + 20; query += 7) {
      const size_t expected = scanLastAtOrBefore(times, from, query);
      ASSERT_EQ(index.lastAtOrBefore(from, query), expected) << "from " << from << " at " << query;
      const size_t expectedBefore = scanLastBefore(times, from, query);
      ASSERT_EQ(index.lastBefore(from, query), expectedBefore) << "from " << from << " before " << query;
      // A guess anywhere, good or bad, changes nothing but the cost.
      for (size_t guess : {from, from + 1, from + 5, from + 9, from + 40, expected, expected + 3, expected + 100}) {
        ASSERT_EQ(index.lastAtOrBefore(from, query, guess), expected)
            << "from " << from << " at " << query << " guessing " << guess;
        ASSERT_EQ(index.lastBefore(from, query, guess), expectedBefore)
            << "from " << from << " before " << query << " guessing " << guess;
      }
    }
  }
}

// The search in two halves (the block, then the time inside it) finds what the scan does, from
// any block it may start at and with any guess of the block.
TEST(TimeIndex, TheBlockThenTheTimeAgreeWithAScan) {
  TimeIndex index;
  const std::vector<int64_t> times = randomTimes(17, 1500, index);
  const int64_t t = times.back();
  const size_t blocks = (times.size() + TimeIndex::kBlock - 1) / TimeIndex::kBlock;
  for (double query = static_cast<double>(times.front()) - 5; query <= static_cast<double>(t) + 20; query += 3) {
    size_t expected = 0;  // blocks whose first time is at or before the query
    while (expected < blocks && static_cast<double>(times[expected * TimeIndex::kBlock]) <= query) ++expected;
    for (size_t from = 0; from <= expected; from += 1 + from / 3) {
      for (size_t guess : {size_t{0}, from, from + 1, expected, expected + 1, expected + 7, from + 40, blocks + 1}) {
        ASSERT_EQ(index.blocksAtOrBefore(from, query, guess), expected)
            << "from block " << from << " at " << query << " guessing " << guess;
      }
    }
    if (expected > 0) {
      ASSERT_EQ(index.lastAtOrBeforeIn(expected - 1, query), scanLastAtOrBefore(times, 0, query)) << "at " << query;
    }
  }
}

// Spans that arrive late go in their place: the blocks' first times follow.
TEST(TimeIndex, InsertsKeepTheSearchRight) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> time(0, 5000);
  TimeIndex index;
  std::vector<int64_t> times;
  for (int n = 0; n < 400; ++n) {
    const int64_t t = time(rng);
    const size_t at = index.insert(t);
    times.insert(std::upper_bound(times.begin(), times.end(), t), t);
    ASSERT_EQ(index[at], t);
  }
  ASSERT_EQ(index.size(), times.size());
  for (size_t i = 0; i < times.size(); ++i) ASSERT_EQ(index[i], times[i]);
  for (size_t from = 0; from < times.size(); from += 13) {
    for (double query = 0; query <= 5100; query += 37) {
      ASSERT_EQ(index.lastAtOrBefore(from, query), scanLastAtOrBefore(times, from, query))
          << "from " << from << " at " << query;
    }
  }
}

// Dropping the front (a run folding its older steps) and pushing more: the searches stay right.
TEST(TimeIndex, DroppingTheFrontKeepsTheSearchRight) {
  TimeIndex index;
  std::vector<int64_t> times;
  int64_t t = 0;
  for (size_t drop : {0, 1, 63, 64, 65, 200, 3, 500}) {
    for (int n = 0; n < 300; ++n) {
      t += n % 4 == 0 ? 0 : 10;
      times.push_back(t);
      index.push(t);
    }
    index.dropFront(drop);
    times.erase(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(std::min(drop, times.size())));
    ASSERT_EQ(index.size(), times.size());
    for (size_t from = 0; from < times.size(); from += 17) {
      for (double query = static_cast<double>(times.front()) - 5; query <= static_cast<double>(t) + 20; query += 29) {
        ASSERT_EQ(index.lastAtOrBefore(from, query, from + 70), scanLastAtOrBefore(times, from, query))
            << "after dropping " << drop << ", from " << from << " at " << query;
      }
    }
  }
}

TEST(TimeIndex, ASingleTimeAndTheLastPlace) {
  TimeIndex index;
  index.push(5);
  EXPECT_EQ(index.lastAtOrBefore(0, 100), 0u);
  for (int64_t t = 6; t < 200; ++t) index.push(t);
  EXPECT_EQ(index.lastAtOrBefore(0, 5.5), 0u);
  EXPECT_EQ(index.lastAtOrBefore(0, 64), 59u) << "times 5, 6, ..., 64 sit at 0..59";
  EXPECT_EQ(index.lastAtOrBefore(0, 1e9), index.size() - 1);
  EXPECT_EQ(index.lastAtOrBefore(index.size() - 1, 1e9), index.size() - 1);
}

}  // namespace
}  // namespace shardscope::trace
