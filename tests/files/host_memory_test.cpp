// A trace is read as far as memory holds its recording: the limit follows the free memory and the
// recording's bytes per byte of the file, and a file past it is refused with those figures.
#include "files/host_memory.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "files/file_text.h"
#include "tests/support/run_cli.h"

namespace shardscope::files {
namespace {

TEST(TraceLimit, FollowsTheFreeMemoryAndTheRecordingsShare) {
  const HostMemory host{int64_t{1} << 30, "MemAvailable in /proc/meminfo"};
  EXPECT_EQ(traceLimit(0.25, host).maxBytes, size_t{4} << 30) << "a quarter of the file in memory: 4x it";
  EXPECT_EQ(traceLimit(2.0, host).maxBytes, size_t{512} << 20);
  EXPECT_NE(traceLimit(0.25, host).why.find("1024 MiB, MemAvailable in /proc/meminfo"), std::string::npos)
      << traceLimit(0.25, host).why;
  EXPECT_EQ(traceLimit(0.25, HostMemory{}).maxBytes, SIZE_MAX) << "free memory not known: nothing refused";
  EXPECT_GT(hostMemoryAvailable().availableBytes, 0) << "this host's /proc/meminfo";
}

TEST(TraceLimit, AFilePastItIsRefusedWithTheFigures) {
  const auto dir = testing::freshTempDir("trace_limit");
  std::ofstream(dir + "/t.json", std::ios::binary) << std::string(300000, ' ');
  const auto limit = traceLimit(2.0, HostMemory{200000, "a test's budget"});
  FileTextStream stream(dir + "/t.json", limit.maxBytes, limit.why);
  while (stream.sbumpc() != std::char_traits<char>::eof()) {}
  EXPECT_NE(stream.error().find("holds more than 100000 B, what this host's free memory"), std::string::npos)
      << stream.error();
  EXPECT_NE(stream.error().find("a test's budget"), std::string::npos) << stream.error();
  EXPECT_NE(stream.error().find("free some memory, or record fewer steps"), std::string::npos) << stream.error();
}

}  // namespace
}  // namespace shardscope::files
