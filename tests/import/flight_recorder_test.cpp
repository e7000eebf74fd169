// Flight Recorder dumps read into collective logs: real gloo jobs' dumps (tests/data/
// flight_recorder_gloo, a pickle job and a JSON one), and the names and files a user may bring.
#include "import/flight_recorder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/run_cli.h"

namespace shardscope::import {
using namespace trace;
namespace {

const std::string kDumps = std::string(SHARDSCOPE_TEST_DATA) + "/flight_recorder_gloo";

TEST(FlightRecorder, ReadsARealGlooJobsPickledDumps) {
  const auto loaded = loadFlightRecorderDumps({kDumps + "/reorder_pickle"});
  ASSERT_EQ(loaded.error, "");
  EXPECT_EQ(loaded.notes, "") << "every rank of the group dumped";
  const auto& logs = loaded.logs;
  EXPECT_EQ(logs.source, "Flight Recorder dumps (version 2.10)");
  EXPECT_EQ(logs.worldSize, 3);
  ASSERT_EQ(logs.ranks.size(), 3u);
  EXPECT_EQ(logs.groupRanks.at("0"), (std::vector<int>{0, 1, 2})) << "gloo's unnamed default group, matched";
  const auto& rank1 = logs.ranks[1];
  EXPECT_EQ(rank1.rank, 1);
  ASSERT_EQ(rank1.entries.size(), 6u);
  EXPECT_EQ(rank1.entries[3].op, "all_gather") << "gloo:all_gather, its backend's prefix off";
  EXPECT_EQ(rank1.entries[3].outputSizes, (std::vector<std::vector<int64_t>>{{3, 4}}))
      << "the world by the input, as gloo records it";
  EXPECT_EQ(rank1.entries[4].op, "barrier");
  EXPECT_EQ(rank1.entries[5].op, "all_gather") << "rank 1's #6, where the others all-reduced";
  EXPECT_EQ(rank1.entries[5].seq, 6);
  EXPECT_EQ(rank1.entries[5].inputDtypes, std::vector<std::string>{"Float"});
  EXPECT_TRUE(rank1.entries[0].finished);
  EXPECT_FALSE(rank1.entries[5].finished) << "still waiting when dumped";
  EXPECT_GT(rank1.entries[5].createdNs, rank1.entries[0].createdNs);
  EXPECT_NE(rank1.entries[5].where.find("pytorch_flight_recorder.py:"), std::string::npos)
      << "the job's own frame, not torch's: " << rank1.entries[5].where;
}

TEST(FlightRecorder, ReadsARealGlooJobsJsonDumpsAndSniffsThemByContent) {
  const std::string dir = kDumps + "/skip_json";
  EXPECT_TRUE(isFlightRecorderDirectory(dir));
  EXPECT_TRUE(looksLikeFlightRecorderDump(dir + "/fr-0"));
  EXPECT_FALSE(looksLikeFlightRecorderDump(kDumps + "/README.md"));
  // A torch.profiler trace's distributedInfo names pg_config too (PyTorch 2.11, an H200's NCCL job).
  const std::string profiled = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2/rank-0.pt.trace.json.gz";
  EXPECT_FALSE(looksLikeFlightRecorderDump(profiled));
  EXPECT_FALSE(isFlightRecorderDirectory(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2"));
  const auto loaded = loadFlightRecorderDumps({dir + "/fr-0", dir + "/fr-1", dir + "/fr-2"});
  ASSERT_EQ(loaded.error, "");
  ASSERT_EQ(loaded.logs.ranks.size(), 3u);
  EXPECT_EQ(loaded.logs.ranks[0].entries.size(), 6u);
  EXPECT_EQ(loaded.logs.ranks[1].entries.size(), 5u) << "rank 1 skipped #6";
  EXPECT_EQ(loaded.logs.ranks[0].entries.back().where, "") << "JSON dumps carry no stacks";
}

TEST(FlightRecorder, RanksComeFromTheNamesEndAndAreNotGuessed) {
  EXPECT_EQ(rankFromDumpName("/d/fr-3"), 3);
  EXPECT_EQ(rankFromDumpName("nccl_trace_rank_12"), 12);
  EXPECT_EQ(rankFromDumpName("fr-7.json"), 7);
  EXPECT_EQ(rankFromDumpName("dump.pkl"), -1);
  const auto dir = testing::freshTempDir("flight_recorder_names");
  std::filesystem::copy_file(kDumps + "/skip_json/fr-0", dir + "/fr-0");
  std::filesystem::copy_file(kDumps + "/skip_json/fr-0", dir + "/fr-0.json");
  auto twice = loadFlightRecorderDumps({dir});
  EXPECT_NE(twice.error.find("are both rank 0's dump: keep one of them"), std::string::npos) << twice.error;
  std::filesystem::remove(dir + "/fr-0.json");
  std::filesystem::copy_file(kDumps + "/skip_json/fr-1", dir + "/dump.json");
  auto unnamed = loadFlightRecorderDumps({dir});
  EXPECT_NE(unnamed.error.find("whose rank its name must end with"), std::string::npos) << unnamed.error;
  std::filesystem::remove(dir + "/dump.json");
  auto alone = loadFlightRecorderDumps({dir});
  ASSERT_EQ(alone.error, "");
  EXPECT_EQ(alone.notes.rfind("no dump of rank 1, 2 (a rank that died", 0), 0u) << alone.notes;
}

TEST(FlightRecorder, ACutOrForeignFileIsNamedNotCrashedOn) {
  const auto dir = testing::freshTempDir("flight_recorder_bad");
  std::ifstream in(kDumps + "/reorder_pickle/fr-0", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir + "/fr-0", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto cut = loadFlightRecorderDumps({dir + "/fr-0"});
  EXPECT_NE(cut.error.find("is not a readable pickle"), std::string::npos) << cut.error;
  std::ofstream(dir + "/fr-1") << R"({"pg_config": {}, "entries": [{"collective_seq_id": "x"}]})";
  auto foreign = loadFlightRecorderDumps({dir + "/fr-1"});
  EXPECT_NE(foreign.error.find("its entry 0 has no collective_seq_id or profiling_name"), std::string::npos)
      << foreign.error;
}

}  // namespace
}  // namespace shardscope::import
