// A job's per-rank files, written by hand as a dying job leaves them: each rank's events come back
// in time order, a torn last line and a rank without a file are said, not fatal.
#include "trace/rank_event_files.h"

#include <gtest/gtest.h>

#include <fstream>

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
  EXPECT_NE(loaded.note.find("lines that are not events skipped in rank 0"), std::string::npos) << loaded.note;
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

}  // namespace
}  // namespace shardscope::trace
