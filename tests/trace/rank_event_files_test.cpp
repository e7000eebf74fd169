// A job's per-rank files, written by hand as a dying job leaves them: each rank's events come back
// in time order, a torn last line and a rank without a file are said, not fatal.
#include "trace/rank_event_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>

#include "tests/support/run_cli.h"
#include "trace/wire.h"

namespace shardscope::trace {
namespace {

Event memoryEvent(int rank, int64_t t, int64_t bytes) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  e.role = static_cast<uint8_t>(MemoryRole::Activation);
  e.bytes = bytes;
  return e;
}

std::string frame(const Event& e) {
  std::string out;
  appendEventFrame(out, e);
  return out;
}

// Files of shardscope before binary frames: JSON lines, still read.
TEST(RankEventFiles, ATornLineAndAMissingRankAreSaidAndTheRestIsRead) {
  const std::string dir = testing::freshTempDir("rank_event_files");
  {
    std::ofstream rank0(rankEventFileName(dir, 0));
    // Out of time order in the file (the recorder drains data before a step's end): read in order.
    rank0 << encodeEventLine(memoryEvent(0, 2000, 100)) << "\n" << encodeEventLine(memoryEvent(0, 1000, 50));
    rank0 << "{\"k\":\"memory\",\"r\":0,\"b\":30";  // killed mid-line
    std::ofstream rank2(rankEventFileName(dir, 2));
    rank2 << encodeEventLine(memoryEvent(2, 1500, 70));
  }
  ASSERT_TRUE(isRankEventDirectory(dir));
  const auto loaded = loadRankEventFiles(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.ranks(), 3) << "rank 2's file makes three ranks";
  EXPECT_NE(loaded.note.find("no file for rank 1"), std::string::npos) << loaded.note;
  EXPECT_NE(loaded.note.find("items that are not events skipped in rank 0"), std::string::npos) << loaded.note;
  EXPECT_TRUE(loaded.ranksFailed) << "no rank finished";
  EXPECT_NE(loaded.note.find("rank 2 stopped without finishing or an error after 0 steps (killed, or its host lost)"),
            std::string::npos)
      << loaded.note;
  const auto& memory = loaded.recording.rank(0).memory;
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory.time(0), 1000);
  EXPECT_EQ(memory.bytes(1)[static_cast<int>(MemoryRole::Activation)], 150);
  EXPECT_EQ(loaded.recording.rank(2).memory.size(), 1u);
}

// A rank that lost its collector wrote again what the collector had not confirmed, some of which
// the collector had kept (here C, and D torn as it died): each event is read once, the collector's
// file up to where the rank's own file says it takes over. In frames, and in older JSON lines.
void expectReplayReadOnce(const std::string& dir, const std::function<std::string(const Event&)>& encode,
                          const std::string& separator) {
  const std::string a = encode(memoryEvent(0, 1000, 1)) + separator, b = encode(memoryEvent(0, 2000, 2)) + separator,
                    c = encode(memoryEvent(0, 3000, 4)) + separator, d = encode(memoryEvent(0, 4000, 8)) + separator,
                    e = encode(memoryEvent(0, 5000, 16)) + separator;
  {
    // The collector confirmed A, B and a heartbeat: the rank's own file takes over from there.
    std::ofstream collected(rankEventFileName(dir, 0), std::ios::binary);
    collected << a << b << "\n" << c << d.substr(0, d.size() / 2);
    std::ofstream own(rankEventFileName(dir, 0, ".after-collector"), std::ios::binary);
    own << replayHeaderLine(a.size() + b.size() + 1) << "\n" << c << d << e;
  }
  const auto loaded = loadRankEventFiles(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.note.find("not events"), std::string::npos) << "the torn event came again whole";
  const auto& memory = loaded.recording.rank(0).memory;
  ASSERT_EQ(memory.size(), 5u) << "A B C D E, C not twice";
  EXPECT_EQ(memory.bytes(4)[static_cast<int>(MemoryRole::Activation)], 31);
}

TEST(RankEventFiles, WhatARankWroteAgainAfterLosingItsCollectorIsReadOnce) {
  expectReplayReadOnce(testing::freshTempDir("rank_event_files_replay"), frame, "");
  const auto line = [](const Event& e) { return encodeEventLine(e); };  // ends with its '\n'
  expectReplayReadOnce(testing::freshTempDir("rank_event_files_replay_lines"), line, "");
  EXPECT_EQ(decodeReplayHeader(replayHeaderLine(12345)), 12345u);
  EXPECT_FALSE(decodeReplayHeader("{\"replay_from\":-1}"));
  EXPECT_FALSE(decodeReplayHeader(encodeEventLine(memoryEvent(0, 1, 1))));
}

// A torn frame at a file's end is said, as a torn line is.
TEST(RankEventFiles, ATornFrameIsSaidAndTheRestIsRead) {
  const std::string dir = testing::freshTempDir("rank_event_files_frames");
  {
    std::ofstream rank0(rankEventFileName(dir, 0), std::ios::binary);
    const std::string last = frame(memoryEvent(0, 3000, 4));
    rank0 << frame(memoryEvent(0, 2000, 100)) << "\n" << frame(memoryEvent(0, 1000, 50)) << last.substr(0, 5);
  }
  const auto loaded = loadRankEventFiles(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_NE(loaded.note.find("items that are not events skipped in rank 0"), std::string::npos) << loaded.note;
  const auto& memory = loaded.recording.rank(0).memory;
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory.time(0), 1000);
  EXPECT_EQ(memory.bytes(1)[static_cast<int>(MemoryRole::Activation)], 150);
}

// A folder whose rank files hold not one event is no job: refused naming the file, not opened as
// a job of the default world with no steps.
TEST(RankEventFiles, AFolderWhoseRankFilesHoldNoEventIsRefused) {
  const std::string dir = testing::freshTempDir("rank_event_files_garbage");
  std::mt19937 random(66);
  std::string garbage(3000, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  std::ofstream(rankEventFileName(dir, 0), std::ios::binary) << garbage;
  auto loaded = loadRankEventFiles(dir);
  EXPECT_NE(loaded.error.find("'" + rankEventFileName(dir, 0) +
                              "' holds 3000 bytes and not one event of a rank's stream (the frames and lines "
                              "'shardscope worker --trace-dir' writes): '" +
                              dir + "' holds no job's recording."),
            std::string::npos)
      << loaded.error;
  EXPECT_EQ(loaded.recording.ranks(), 0);

  // Beside an empty file of another rank, the file with bytes is the one named.
  std::ofstream(rankEventFileName(dir, 1), std::ios::binary).flush();
  loaded = loadRankEventFiles(dir);
  EXPECT_NE(loaded.error.find("rank-0.events' holds 3000 bytes and not one event of a rank's stream (the frames and "
                              "lines 'shardscope worker --trace-dir' writes), nor does any other rank file here"),
            std::string::npos)
      << loaded.error;

  // One rank's event makes it a job, its other rank's garbage said as items skipped.
  std::ofstream(rankEventFileName(dir, 1), std::ios::binary) << frame(memoryEvent(1, 1000, 10));
  loaded = loadRankEventFiles(dir);
  EXPECT_EQ(loaded.error, "");
  EXPECT_NE(loaded.note.find("items that are not events skipped in rank 0"), std::string::npos) << loaded.note;

  const std::string empty = testing::freshTempDir("rank_event_files_empty");
  std::ofstream(rankEventFileName(empty, 0), std::ios::binary).flush();
  EXPECT_NE(loadRankEventFiles(empty).error.find("'" + rankEventFileName(empty, 0) + "' is empty: '" + empty +
                                                 "' holds no job's recording"),
            std::string::npos);
}

// A rank's clock from its readings: a drifting host's offset interpolated between them, the
// nearest reading outside them; a rank whose every offset lies within its bound is not moved.
TEST(RankClock, FollowsADriftingClockBetweenReadingsAndLeavesOneWithinItsBound) {
  auto reading = [](int64_t local, int64_t offset, int64_t bound) {
    Event e;
    e.kind = EventKind::ClockOffset;
    e.beginNs = local;
    e.endNs = local + offset;
    e.uncertaintyNs = bound;
    e.text = "host-b";
    return e;
  };
  RankClock clock;
  clock.add(reading(2'000'000'000, 3'000'000, 50'000));  // added out of order: kept in time order
  clock.add(reading(1'000'000'000, 1'000'000, 50'000));
  clock.add(reading(1'500'000'000, 0, -1));  // no reply read: ignored
  ASSERT_EQ(clock.readings().size(), 2u);
  EXPECT_TRUE(clock.shifted());
  EXPECT_EQ(clock.host(), "host-b");
  EXPECT_EQ(clock.shiftAt(0), 1'000'000);
  EXPECT_EQ(clock.shiftAt(1'500'000'000), 2'000'000) << "halfway between the readings";
  EXPECT_EQ(clock.shiftAt(1'250'000'000), 1'500'000);
  EXPECT_EQ(clock.shiftAt(9'000'000'000), 3'000'000);
  EXPECT_TRUE(clock.drifted()) << "2 ms apart, bounds of 50 us";
  EXPECT_DOUBLE_EQ(clock.driftPpm(), 2000.0) << "2 ms over 1 s";
  EXPECT_EQ(clock.worstUncertaintyNs(), 50'000);

  RankClock sameHost;
  sameHost.add(reading(1'000'000'000, 20'000, 50'000));
  sameHost.add(reading(2'000'000'000, -30'000, 50'000));
  EXPECT_TRUE(sameHost.measured());
  EXPECT_FALSE(sameHost.shifted());
  EXPECT_EQ(sameHost.shiftAt(1'500'000'000), 0);
  Event e = memoryEvent(0, 1'500'000'000, 64);
  shiftOntoRank0(e, clock);
  EXPECT_EQ(e.beginNs, 1'502'000'000);
  EXPECT_EQ(RankClock().shiftAt(5), 0) << "never measured: not moved";

  // Another host, steady: readings 40 us apart with bounds of 50 and 30 us measured one offset,
  // and the most precise of them holds throughout (no drift read into noise).
  RankClock steady;
  steady.add(reading(1'000'000'000, 3'000'000, 50'000));
  steady.add(reading(2'000'000'000, 3'000'040, 30'000));
  EXPECT_TRUE(steady.shifted());
  EXPECT_FALSE(steady.drifted());
  EXPECT_EQ(steady.shiftAt(1'000'000'000), 3'000'040);
  EXPECT_EQ(steady.shiftAt(1'500'000'000), 3'000'040);
}

}  // namespace
}  // namespace shardscope::trace
