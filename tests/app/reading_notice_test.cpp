// Reading a large recording says so on the terminal: one line rewritten in place on a terminal and
// cleared at the end, one line in a log, nothing for a small one or one over at once.
#include "app/reading_notice.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/run_cli.h"

namespace shardscope::app {
namespace {

// What `notice` wrote to its file while `during` ran, the notice ended.
template <class During>
std::string written(const std::string& path, ReadingNotice::Options options, During during) {
  std::FILE* out = std::tmpfile();
  options.out = out;
  {
    ReadingNotice notice("shardscope view", {path}, options);
    during();
  }
  std::string text(static_cast<size_t>(std::ftell(out)), '\0');
  std::rewind(out);
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  return text;
}

// The share and the size, in the project's own units (trace::formatBytes).
TEST(ReadingNotice, DescribesTheShareReadOfTheSize) {
  const auto dir = testing::freshTempDir("reading_notice_describe");
  std::ofstream(dir + "/t.pftrace", std::ios::binary) << std::string(8 << 20, 'x');
  const files::ReadProgress progress({dir + "/t.pftrace"});
  std::ifstream in(dir + "/t.pftrace", std::ios::binary);
  std::string half(4 << 20, '\0');
  in.read(half.data(), static_cast<std::streamsize>(half.size()));
  const std::string said = describeReading(progress);
  EXPECT_NE(said.find("% of 8.00 MiB"), std::string::npos) << said;
  EXPECT_NEAR(std::stoi(said), 50, 5) << said;
}

TEST(ReadingNotice, ALogGetsOneLineAndASmallOrQuickReadingNone) {
  const auto dir = testing::freshTempDir("reading_notice_log");
  std::ofstream(dir + "/t.pftrace", std::ios::binary) << std::string(3000000, 'x');
  ReadingNotice::Options log;
  log.minBytes = 1000000;
  log.every = std::chrono::milliseconds(20);
  const auto aWhile = [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
  EXPECT_EQ(written(dir + "/t.pftrace", log, aWhile), "shardscope view: reading " + dir + "/t.pftrace (2.86 MiB)\n");
  log.every = std::chrono::seconds(30);
  EXPECT_EQ(written(dir + "/t.pftrace", log, [] {}), "") << "over before the first interval";
  log.every = std::chrono::milliseconds(20);
  log.minBytes = 4000000;
  EXPECT_EQ(written(dir + "/t.pftrace", log, aWhile), "") << "under the least size told of";
}

TEST(ReadingNotice, ATerminalsLineIsRewrittenWithTheShareThenCleared) {
  const auto dir = testing::freshTempDir("reading_notice_terminal");
  std::ofstream(dir + "/t.pftrace", std::ios::binary) << std::string(3000000, 'x');
  ReadingNotice::Options terminal;
  terminal.terminal = true;
  terminal.minBytes = 0;
  terminal.every = std::chrono::milliseconds(20);
  const std::string text = written(dir + "/t.pftrace", terminal, [&] {
    std::ifstream in(dir + "/t.pftrace", std::ios::binary);
    std::string half(1500000, '\0');
    in.read(half.data(), static_cast<std::streamsize>(half.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  });
  const std::string line = "\rshardscope view: reading t.pftrace: ";  // the name alone: a long path would wrap
  EXPECT_EQ(text.find(line), 0u) << text;
  EXPECT_NE(text.find(line, 1), std::string::npos) << "rewritten at each interval: " << text;
  EXPECT_NE(text.find("% of 2.86 MiB\033[K"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K") << "cleared once the reading ends";
}

}  // namespace
}  // namespace shardscope::app
