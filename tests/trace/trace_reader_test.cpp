// A trace is read event by event as it is parsed; what depends on the file's order (memory
// counters become deltas against the rank's previous sample) is refused, with a message, when
// the order is not the one shardscope writes.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_cli.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {
namespace {

std::string writeTrace(const std::string& name, const std::string& events) {
  const std::string path = testing::freshTempDir("trace_reader") + "/" + name;
  std::ofstream(path) << R"({"otherData": {"strategy": "full_shard"}, "traceEvents": [)" << events << "]}";
  return path;
}

TEST(TraceReader, ReadsEventsInTheOrderShardscopeStreamsThem) {
  // Rank 1's names, then a piece of rank 0, one of rank 1, and rank 0's next piece.
  const auto path = writeTrace("pieces.json", R"(
    {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "rank 1"}},
    {"ph": "X", "cat": "compute", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"kind": "step", "step": 0}},
    {"ph": "C", "pid": 0, "name": "memory", "ts": 1, "args": {"activation": 100}},
    {"ph": "C", "pid": 1, "name": "memory", "ts": 2, "args": {"activation": 50}},
    {"ph": "X", "cat": "compute", "pid": 0, "tid": 1, "ts": 20, "dur": 10, "args": {"kind": "step", "step": 1}},
    {"ph": "C", "pid": 0, "name": "memory", "ts": 21, "args": {"activation": 300}})");
  const auto loaded = loadChromeTrace(path);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.ranks(), 2);
  EXPECT_EQ(loaded.config.world, 2);
  EXPECT_EQ(loaded.config.strategy, StrategyKind::FullShard);
  EXPECT_EQ(loaded.recording.rank(0).steps.size(), 2u);
  EXPECT_EQ(loaded.recording.rank(0).peakTotal, 300);
  EXPECT_EQ(loaded.recording.rank(1).peakTotal, 50);
}

TEST(TraceReader, MemorySamplesOutOfTimeOrderAreRefusedByName) {
  const auto path = writeTrace("backwards.json", R"(
    {"ph": "C", "pid": 3, "name": "memory", "ts": 10, "args": {"activation": 100}},
    {"ph": "C", "pid": 3, "name": "memory", "ts": 5, "args": {"activation": 50}})");
  const auto loaded = loadChromeTrace(path);
  EXPECT_NE(loaded.error.find("memory samples of rank 3 out of time order (event 2 at 5 us"), std::string::npos)
      << loaded.error;
}

}  // namespace
}  // namespace shardscope::trace
