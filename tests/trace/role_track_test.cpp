// A role track keeps only each sample's changed roles, as varints of the change, and a snapshot
// every 8; every sample reads back as pushed, and splitting off the front keeps what is held now.
#include "trace/role_track.h"

#include <gtest/gtest.h>

#include <random>

namespace shardscope::trace {
namespace {

// Samples as memory events make them: one or two roles change at a time, sometimes none.
std::vector<RoleBytes> randomSamples(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<RoleBytes> out;
  RoleBytes bytes{};
  for (size_t i = 0; i < count; ++i) {
    const int changes = static_cast<int>(random() % 3);
    for (int c = 0; c < changes; ++c) bytes[random() % kMemoryRoleCount] = static_cast<int64_t>(random() % 100000);
    out.push_back(bytes);
  }
  return out;
}

TEST(RoleTrack, EverySampleReadsBackAsPushedWithItsTime) {
  const auto samples = randomSamples(1000, 7);
  RoleTrack track;
  for (size_t i = 0; i < samples.size(); ++i) track.push(static_cast<int64_t>(10 * i + 5), samples[i]);
  ASSERT_EQ(track.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(track.bytes(i), samples[i]) << i;
    EXPECT_EQ(track.time(i), static_cast<int64_t>(10 * i + 5));
  }
  EXPECT_EQ(track.last(), samples.back());
  EXPECT_EQ(track.bytesAt(4.0), RoleBytes{}) << "nothing before the first sample";
  EXPECT_EQ(track.bytesAt(5.0), samples[0]);
  EXPECT_EQ(track.bytesAt(19.9), samples[1]);
  EXPECT_EQ(track.countAtOrBefore(1e12), samples.size());
}

// A file may hold any sizes: the extremes of int64 and changes across them read back exactly, as
// do samples where every role changes at once.
TEST(RoleTrack, ExtremeValuesAndManyChangesReadBackExactly) {
  std::mt19937_64 random(11);
  const int64_t extremes[] = {0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX - 3, INT64_MIN + 5, 1LL << 40};
  std::vector<RoleBytes> samples;
  RoleBytes bytes{};
  for (int i = 0; i < 500; ++i) {
    const int changes = static_cast<int>(random() % (kMemoryRoleCount + 1));
    for (int c = 0; c < changes; ++c) {
      const auto role = random() % kMemoryRoleCount;
      bytes[role] = random() % 2 ? extremes[random() % 8] : static_cast<int64_t>(random());
    }
    samples.push_back(bytes);
  }
  RoleTrack track;
  for (size_t i = 0; i < samples.size(); ++i) track.push(static_cast<int64_t>(i), samples[i]);
  for (size_t i = 0; i < samples.size(); ++i) EXPECT_EQ(track.bytes(i), samples[i]) << i;
}

// One role changing by a few MB a sample, as nearly every memory event does, takes a few bytes
// a sample beside its time, not the 8 a value took.
TEST(RoleTrack, OneRoleChangingTakesAFewBytesASample) {
  RoleTrack track;
  RoleBytes bytes{};
  for (int i = 0; i < 80000; ++i) {
    bytes[static_cast<int>(MemoryRole::Activation)] += i % 2 ? -(3 << 20) : (3 << 20);
    track.push(i, bytes);
  }
  const double perSample = static_cast<double>(track.heldBytes()) / static_cast<double>(track.size());
  EXPECT_LT(perSample, 8.0 + 8.0) << "its time (8 bytes), and under 8 for its bytes";
}

TEST(RoleTrack, TakingTheFrontSplitsTheSamplesAndKeepsWhatIsHeld) {
  const auto samples = randomSamples(200, 11);
  RoleTrack track;
  for (size_t i = 0; i < samples.size(); ++i) track.push(static_cast<int64_t>(i), samples[i]);
  const RoleTrack front = track.takeFront(77);
  ASSERT_EQ(front.size(), 77u);
  ASSERT_EQ(track.size(), 123u);
  for (size_t i = 0; i < 77; ++i) EXPECT_EQ(front.bytes(i), samples[i]) << i;
  for (size_t i = 0; i < 123; ++i) {
    EXPECT_EQ(track.bytes(i), samples[77 + i]) << i;
    EXPECT_EQ(track.time(i), static_cast<int64_t>(77 + i));
  }
  const RoleTrack all = track.takeFront(track.size());
  EXPECT_TRUE(track.empty());
  EXPECT_EQ(track.last(), samples.back()) << "every sample went, what is held stays";
  RoleBytes next = samples.back();
  next[2] += 1;
  track.push(500, next);
  EXPECT_EQ(track.bytes(0), next);
}

// A window's recording takes a few steps off the front at a time, by any count, while samples keep
// coming: each sample left reads back as pushed, and the ones taken come out whole.
TEST(RoleTrack, RepeatedTakesOfAnyCountInterleavedWithPushes) {
  const auto samples = randomSamples(3000, 19);
  RoleTrack track;
  size_t pushed = 0, taken = 0;
  for (size_t take : {0, 1, 7, 8, 9, 3, 16, 100, 5, 250, 1}) {
    for (size_t n = 0; n < 250; ++n, ++pushed) track.push(static_cast<int64_t>(pushed), samples[pushed]);
    const RoleTrack front = track.takeFront(take);
    ASSERT_EQ(front.size(), take);
    for (size_t i = 0; i < take; ++i) ASSERT_EQ(front.bytes(i), samples[taken + i]) << "taken " << taken + i;
    taken += take;
    ASSERT_EQ(track.size(), pushed - taken);
    for (size_t i = 0; i < track.size(); ++i) {
      ASSERT_EQ(track.bytes(i), samples[taken + i]) << "sample " << taken + i << " after taking " << take;
      ASSERT_EQ(track.time(i), static_cast<int64_t>(taken + i));
    }
    EXPECT_EQ(track.bytesAt(static_cast<double>(taken) + 0.5), samples[taken]);
  }
}

}  // namespace
}  // namespace shardscope::trace
