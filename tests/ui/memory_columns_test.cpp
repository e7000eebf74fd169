// A memory lane's columns: each the highest sample in force over its pixel, as a walk over every
// sample finds it, on random lanes at every density (a sample per many pixels, many per pixel);
// and kept between frames only while neither the view nor the lane changed.
#include "ui/memory_columns.h"

#include <gtest/gtest.h>

#include <random>

namespace shardscope::ui {
namespace {

struct Lane {
  trace::RoleTrack samples;
  trace::RangeMax totals;
  void push(int64_t t, int64_t total) {
    trace::RoleBytes bytes{};
    bytes[0] = total;
    samples.push(t, bytes);
    totals.push(total);
  }
};

// The column's sample by brute force: the one in force at its start, then every one inside it;
// the highest, the earliest of equals.
std::vector<size_t> walkEverySample(const Lane& lane, const ColumnSpan& span) {
  std::vector<size_t> out(static_cast<size_t>(span.width), kNoSample);
  const double nsPerPixel = (span.endAbs - span.beginAbs) / span.width;
  for (int c = 0; c < span.width; ++c) {
    const double begin = span.beginAbs + c * nsPerPixel, end = span.beginAbs + (c + 1) * nsPerPixel;
    size_t best = kNoSample;
    for (size_t i = 0; i < lane.samples.size(); ++i) {
      const double t = static_cast<double>(lane.samples.time(i));
      const bool inForceAtStart =
          t <= begin && (i + 1 == lane.samples.size() || static_cast<double>(lane.samples.time(i + 1)) > begin);
      if (!inForceAtStart && !(t > begin && t <= end)) continue;
      if (best == kNoSample || lane.totals.value(i) > lane.totals.value(best)) best = i;
    }
    out[static_cast<size_t>(c)] = best;
  }
  return out;
}

TEST(MemoryColumns, EachColumnShowsTheHighestSampleInForceOverIt) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    Lane lane;
    const int samples = 1 + static_cast<int>(rng() % 3000);
    int64_t t = 1'000'000 + static_cast<int64_t>(rng() % 1000);
    for (int i = 0; i < samples; ++i) {
      t += static_cast<int64_t>(rng() % 5000);  // times repeat sometimes (0 apart)
      lane.push(t, static_cast<int64_t>(rng() % 1'000'000));
    }
    // Views before, across and past the samples, at a sample per many pixels and many per pixel.
    const double span = static_cast<double>(t - 1'000'000) * (0.01 + static_cast<double>(rng() % 200) / 100.0);
    const double begin = 1'000'000 + (static_cast<double>(rng() % 2000) - 1000.0) * 100.0;
    const ColumnSpan view{begin, begin + std::max(span, 1.0), 1 + static_cast<int>(rng() % 300)};
    ASSERT_EQ(findMemoryColumns(lane.samples, lane.totals, view), walkEverySample(lane, view))
        << "round " << round << ": " << samples << " samples over " << view.width << " columns";
  }
}

// Columns of many blocks each, where the search rules an end block's samples out by the block's
// best: values from a handful (ties everywhere, the earliest must win), peaks placed just inside
// and just outside column ends, a lane whose last block is not full, at every width from a block
// per column to hundreds.
TEST(MemoryColumns, ColumnsOfManyBlocksKeepTheEarliestHighestAtTheirEnds) {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 24; ++round) {
    Lane lane;
    const int samples = 2000 + static_cast<int>(rng() % 30000);
    const int64_t levels = 1 + static_cast<int64_t>(rng() % 4);
    int64_t t = 0;
    for (int i = 0; i < samples; ++i) {
      t += 1 + static_cast<int64_t>(rng() % 3);
      lane.push(t, static_cast<int64_t>(rng()) % levels);
    }
    const int width = 1 + static_cast<int>(rng() % 120);
    const ColumnSpan view{-5.0, static_cast<double>(t) * 1.01, width};
    // A peak at a column's last sample, another at the sample in force at a column's start.
    Lane peaked;
    const double pixel = view.columnNs();
    const int64_t edge = static_cast<int64_t>(view.beginAbs + pixel * (1 + rng() % width));
    for (size_t i = 0; i < lane.samples.size(); ++i) {
      const int64_t ti = lane.samples.time(i);
      const bool atEdge = ti <= edge && (i + 1 == lane.samples.size() || lane.samples.time(i + 1) > edge);
      peaked.push(ti, atEdge ? levels + 1 : lane.totals.value(i));
    }
    for (const Lane* l : {&lane, &peaked}) {
      ASSERT_EQ(findMemoryColumns(l->samples, l->totals, view), walkEverySample(*l, view))
          << "round " << round << ": " << samples << " samples over " << width << " columns, " << levels << " levels";
    }
  }
}

TEST(MemoryColumns, KeptWhileTheViewAndTheLaneStayAndFoundAgainWhenEitherMoves) {
  Lane lane;
  for (int i = 0; i < 1000; ++i) lane.push(1000 + 10 * i, (i * 7919) % 1013);
  MemoryColumnCache cache;
  const ColumnSpan view{1000, 11000, 200};
  const auto first = cache.columns(lane.samples, lane.totals, view);
  EXPECT_EQ(first, findMemoryColumns(lane.samples, lane.totals, view));
  EXPECT_EQ(cache.columns(lane.samples, lane.totals, view), first);
  EXPECT_EQ(cache.found(), 1);
  EXPECT_EQ(cache.kept(), 1) << "nothing changed: kept";

  const ColumnSpan moved{1010, 11010, 200};
  EXPECT_EQ(cache.columns(lane.samples, lane.totals, moved), findMemoryColumns(lane.samples, lane.totals, moved));
  EXPECT_EQ(cache.found(), 2) << "the view moved a pixel: found again";

  lane.push(10'990, 5000);  // a live run's new sample, inside the view
  const auto grown = cache.columns(lane.samples, lane.totals, moved);
  EXPECT_EQ(cache.found(), 3) << "the lane grew: found again";
  EXPECT_EQ(lane.samples.time(grown.back()), 10'990) << "the new, highest sample shows in the last column";

  Lane other;  // another lane is not taken for this one
  for (int i = 0; i < 1000; ++i) other.push(1000 + 10 * i, 1);
  cache.columns(other.samples, other.totals, moved);
  EXPECT_EQ(cache.found(), 4);
}

// A frame's lanes searched at once, on several threads: each lane's columns are what a search of
// it alone finds, its draw then counts as found (not kept), and a lane that did not change is
// kept, not searched again.
TEST(MemoryColumns, LanesSearchedAtOnceMatchEachSearchedAlone) {
  std::mt19937_64 rng(5);
  std::vector<Lane> lanes(6);
  for (auto& lane : lanes) {
    int64_t t = 1000;
    for (int i = 0; i < 20000; ++i) lane.push(t += static_cast<int64_t>(rng() % 50), static_cast<int64_t>(rng() % 999));
  }
  std::vector<MemoryLane> all;
  for (const auto& lane : lanes) all.push_back({&lane.samples, &lane.totals});
  all.push_back(all.front());  // a lane listed twice is searched once
  MemoryColumnCache cache;
  const ColumnSpan view{1000, 500'000, 700};
  cache.findAll(all, view);
  EXPECT_EQ(cache.found(), 6);
  for (const auto& lane : lanes) {
    EXPECT_EQ(cache.columns(lane.samples, lane.totals, view), findMemoryColumns(lane.samples, lane.totals, view));
  }
  EXPECT_EQ(cache.found(), 6) << "each lane's draw took what findAll found";
  EXPECT_EQ(cache.kept(), 0) << "found this frame, not kept from an earlier one";

  lanes[2].push(499'000, 5000);  // one lane grew
  cache.findAll(all, view);      // one stale lane: left to its draw, no thread for it
  for (const auto& lane : lanes) cache.columns(lane.samples, lane.totals, view);
  EXPECT_EQ(cache.found(), 7) << "only the lane that grew is searched again";
  EXPECT_EQ(cache.kept(), 5);
  EXPECT_EQ(lanes[2].samples.time(cache.columns(lanes[2].samples, lanes[2].totals, view)[699]), 499'000);
}

// A view dragged by whole columns keeps the columns still in view and searches the new ones: after
// every drag, later and earlier, by one column or many, in a lane of a sample per many columns and
// of many per column, the columns are what a fresh search of the view finds. A zoom, a drag by a
// part of a column or past the view's width, is no drag: every column is searched.
TEST(MemoryColumns, ADragByWholeColumnsSearchesOnlyTheColumnsItBringsIn) {
  std::mt19937_64 rng(23);
  for (const int64_t gap : {3, 40, 2000}) {  // many samples per column, about one, one per many
    Lane lane;
    int64_t t = 5'000'000;
    for (int i = 0; i < 30000; ++i)
      lane.push(t += static_cast<int64_t>(rng() % (2 * gap)), static_cast<int64_t>(rng() % 9999));
    MemoryColumnCache cache;
    const int width = 640;
    const double columnNs = static_cast<double>(t - 5'000'000) / 2000;
    ColumnSpan view{5'000'000 + 200 * columnNs, 5'000'000 + (200 + width) * columnNs, width};
    cache.columns(lane.samples, lane.totals, view);
    for (int drag = 0; drag < 60; ++drag) {
      const int k = static_cast<int>(rng() % 41) - 20;  // -20 .. 20 columns; 0: the view stays
      view.beginAbs += k * view.columnNs();
      view.endAbs = view.beginAbs + width * columnNs;
      ASSERT_EQ(cache.columns(lane.samples, lane.totals, view), findMemoryColumns(lane.samples, lane.totals, view))
          << "gap " << gap << ", drag " << drag << " by " << k << " columns";
    }
    EXPECT_GT(cache.moved(), 50) << "the drags reused the columns still in view";
    const int64_t moved = cache.moved();
    ColumnSpan zoomed{view.beginAbs, view.endAbs - 3 * columnNs, width};
    EXPECT_EQ(cache.columns(lane.samples, lane.totals, zoomed), findMemoryColumns(lane.samples, lane.totals, zoomed));
    ColumnSpan nudged{zoomed.beginAbs + 0.5 * zoomed.columnNs(), zoomed.endAbs + 0.5 * zoomed.columnNs(), width};
    EXPECT_EQ(cache.columns(lane.samples, lane.totals, nudged), findMemoryColumns(lane.samples, lane.totals, nudged));
    ColumnSpan far{nudged.beginAbs + width * nudged.columnNs(), nudged.endAbs + width * nudged.columnNs(), width};
    EXPECT_EQ(cache.columns(lane.samples, lane.totals, far), findMemoryColumns(lane.samples, lane.totals, far));
    EXPECT_EQ(cache.moved(), moved) << "a zoom, half a column, a whole width: searched whole";
  }
  EXPECT_EQ(columnsMoved({0, 100, 10}, {30, 130, 10}), 3);
  EXPECT_EQ(columnsMoved({0, 100, 10}, {-20, 80, 10}), -2);
  EXPECT_FALSE(columnsMoved({0, 100, 10}, {30, 130, 11})) << "another width";
}

}  // namespace
}  // namespace shardscope::ui
