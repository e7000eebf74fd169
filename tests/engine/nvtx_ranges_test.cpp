// NVTX ranges as nsys sees them, without nsys or a GPU: a real run with a test tool injected the
// way nsys injects its own (NVTX_INJECTION64_PATH) records every range each rank pushes; they must
// be the spans and collectives the run's trace holds, under the same names and as often, in the
// "shardscope" domain, each popped on the thread that pushed it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

using Names = std::map<std::string, int>;  // name -> how many

struct Captured {
  Names pushed;
  bool balanced = true;  // every pop on a thread that had a range open
  std::string domains;   // any domain other than "shardscope"
};

Captured readCapture(const std::string& path) {
  Captured out;
  std::map<std::string, int> open;  // thread -> ranges open
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string f; std::getline(split, f, '\t');) fields.push_back(f);
    if (fields.size() < 3) continue;
    if (fields[2] != "shardscope") out.domains += fields[2] + " ";
    if (fields[0] == "push" && fields.size() == 4) {
      ++out.pushed[fields[3]];
      ++open[fields[1]];
    } else if (fields[0] == "pop") {
      out.balanced = out.balanced && open[fields[1]]-- > 0;
    }
  }
  for (const auto& [thread, n] : open) out.balanced = out.balanced && n == 0;
  return out;
}

// Per rank (pid in the trace), the names of its compute spans and collectives.
std::map<int, Names> traceNames(const std::string& path) {
  std::map<int, Names> out;
  const auto trace = nlohmann::json::parse(std::ifstream(path));
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat == "compute" || cat == "comm") ++out[e["pid"].get<int>()][e["name"].get<std::string>()];
  }
  return out;
}

TEST(NvtxRanges, EachRankPushesTheSpansAndCollectivesOfItsTrace) {
#ifndef SHARDSCOPE_NVTX_CAPTURE_LIB
  GTEST_SKIP() << "NVTX's headers were not found at build time: the engine emits no ranges";
#else
  const std::string dir = testing::freshTempDir("nvtx_ranges");
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = config::StrategyKind::FullShard;
  c.activationCheckpointing = config::Checkpointing::Blocks;  // recompute spans too
  const auto run = testing::runShardscope(testing::runArgsOf(c, {"--trace", dir + "/run.json"}),
                                          {std::string("NVTX_INJECTION64_PATH=") + SHARDSCOPE_NVTX_CAPTURE_LIB,
                                           "SHARDSCOPE_NVTX_CAPTURE=" + dir + "/nvtx"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const auto ranks = traceNames(dir + "/run.json");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_GT(ranks.at(0).count("recompute blocks.1"), 0u) << "the run recomputed";
  std::vector<Captured> captured;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("nvtx.", 0) == 0) captured.push_back(readCapture(entry.path().string()));
  }
  ASSERT_EQ(captured.size(), 2u) << "one capture per rank process (the controller pushes none)";
  for (const auto& rank : captured) {
    EXPECT_TRUE(rank.balanced) << "each range popped on its own thread";
    EXPECT_EQ(rank.domains, "") << "every range in the shardscope domain";
    // The ranks of a full_shard run hold the same names: each capture has every span and
    // collective of the trace, as often; besides them only what ran after recording stopped
    // (the final parameters gathered, the closing barrier), which nsys shows too.
    std::string diff;
    for (const auto& [name, n] : ranks.at(0)) {
      const auto found = rank.pushed.find(name);
      const int got = found == rank.pushed.end() ? 0 : found->second;
      if (got != n) diff += name + ": trace " + std::to_string(n) + ", NVTX " + std::to_string(got) + "\n";
    }
    int afterRecording = 0;
    for (const auto& [name, n] : rank.pushed) {
      if (ranks.at(0).count(name)) continue;
      const bool closing = name.find("(export)") != std::string::npos || name == "barrier end of run";
      if (closing)
        afterRecording += n;
      else
        diff += name + ": NVTX only, " + std::to_string(n) + "\n";
    }
    EXPECT_EQ(diff, "");
    EXPECT_GT(afterRecording, 0) << "the closing collectives are named too";
  }
#endif
}

// Without a tool, nothing is pushed: the variable is what turns ranges on.
TEST(NvtxRanges, NoToolNoRanges) {
  const std::string dir = testing::freshTempDir("nvtx_none");
  const auto run = testing::runShardscope(testing::runArgsOf(testing::tinyGptConfig()),
                                          {"SHARDSCOPE_NVTX_CAPTURE=" + dir + "/nvtx"});
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace shardscope::engine
