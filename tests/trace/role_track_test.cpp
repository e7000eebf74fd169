// A role track keeps only each sample's changed roles and a snapshot every 32; every sample reads
// back as pushed, and splitting off the front keeps what is held now.
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

}  // namespace
}  // namespace shardscope::trace
