// The range-max pyramid against the obvious scan, on random values with many ties, over every range
// of a sequence that grows past several blocks and capacity doublings while it is queried.
#include <gtest/gtest.h>

#include <random>

#include "trace/range_max.h"

namespace shardscope::trace {
namespace {

size_t scanArgmax(const std::vector<int64_t>& v, size_t begin, size_t end) {
  size_t best = begin;
  for (size_t i = begin + 1; i < end; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

TEST(RangeMax, AgreesWithAScanOnEveryRangeAsItGrows) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> value(0, 20);  // few distinct values: ties everywhere
  RangeMax tree;
  std::vector<int64_t> values;
  for (int n = 1; n <= 3000; ++n) {
    values.push_back(value(rng));
    tree.push(values.back());
    ASSERT_EQ(tree.size(), values.size());
    // Every range while the sequence is short; then ranges from every 7th (past 100) or 61st (past
    // 500, on every 5th length) start, with every end: each block boundary is crossed both ways.
    if (n > 500 && n % 5 != 0) continue;
    // The scan's answer for [begin, end) grows with end: kept as end moves on, not scanned again.
    for (size_t begin = 0; begin < values.size(); begin += (n > 500 ? 61 : n > 100 ? 7 : 1)) {
      size_t scanned = begin;
      for (size_t end = begin + 1; end <= values.size(); ++end) {
        if (values[end - 1] > values[scanned]) scanned = end - 1;
        ASSERT_EQ(tree.argmax(begin, end), scanned) << "n " << n << " [" << begin << ", " << end << ")";
      }
    }
  }
}

// A run folding its older steps drops the front over and over, by counts off the blocks' edges,
// while it keeps growing: the rest answers as a fresh sequence of the same values would.
TEST(RangeMax, DroppingTheFrontLeavesTheRestAsIfPushedAlone) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> value(0, 50);
  RangeMax tree;
  std::vector<int64_t> values;
  for (int round = 0; round < 40; ++round) {
    for (int n = 0; n < 150; ++n) {
      values.push_back(value(rng));
      tree.push(values.back());
    }
    const size_t drop = rng() % (values.size() + 1);
    tree.dropFront(drop);
    values.erase(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(drop));
    ASSERT_EQ(tree.size(), values.size());
    for (size_t begin = 0; begin < values.size(); begin += 13) {
      for (size_t end = begin + 1; end <= values.size(); end += 5) {
        ASSERT_EQ(tree.argmax(begin, end), scanArgmax(values, begin, end))
            << "round " << round << " [" << begin << ", " << end << ")";
      }
    }
  }
}

TEST(RangeMax, RisingAndFallingRuns) {
  RangeMax tree;
  for (int64_t v : {5, 1, 9, 9, 3, 12, 0}) tree.push(v);
  EXPECT_EQ(tree.argmax(0, 7), 5u);
  EXPECT_EQ(tree.argmax(0, 5), 2u) << "the earlier of the two 9s";
  EXPECT_EQ(tree.argmax(3, 5), 3u);
  EXPECT_EQ(tree.argmax(6, 7), 6u);
}

}  // namespace
}  // namespace shardscope::trace
