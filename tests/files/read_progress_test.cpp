// How far a command has read the files it opens, told from what the process has read (Linux's
// rchar), against the files' sizes: no reader reports anything itself.
#include "files/read_progress.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/run_cli.h"

namespace shardscope::files {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

void writeBytes(const std::string& path, size_t bytes) {
  std::ofstream(path, std::ios::binary) << std::string(bytes, 'x');
}

void readBytes(std::ifstream& in, size_t bytes) {
  std::string buffer(bytes, '\0');
  in.read(buffer.data(), static_cast<std::streamsize>(bytes));
  ASSERT_EQ(static_cast<size_t>(in.gcount()), bytes);
}

TEST(ReadProgress, TheFilesSizesAddUpADirectorysTwoLevelsDown) {
  const auto dir = testing::freshTempDir("read_progress_sizes");
  std::filesystem::create_directories(dir + "/rank-1/deeper");
  writeBytes(dir + "/rank-0.json", 3000);
  writeBytes(dir + "/rank-1/trace.json", 500);
  writeBytes(dir + "/rank-1/deeper/left_out.json", 70);
  EXPECT_EQ(bytesOfPaths({dir}), 3500u);
  EXPECT_EQ(bytesOfPaths({dir + "/rank-0.json", dir + "/rank-1/trace.json"}), 3500u);
  EXPECT_EQ(bytesOfPaths({dir + "/missing.json"}), 0u);
}

TEST(ReadProgress, TheShareIsWhatTheProcessReadOfTheFiles) {
  ASSERT_TRUE(processReadBytes().has_value()) << "Linux's /proc/self/io";
  const auto dir = testing::freshTempDir("read_progress_share");
  writeBytes(dir + "/t.pftrace", 8 * kMiB);
  const ReadProgress progress({dir + "/t.pftrace"});
  EXPECT_EQ(progress.totalBytes(), 8 * kMiB);
  EXPECT_LT(progress.share(), 0.01);
  std::ifstream in(dir + "/t.pftrace", std::ios::binary);
  readBytes(in, 4 * kMiB);
  EXPECT_NEAR(progress.share(), 0.5, 0.05);
  readBytes(in, 4 * kMiB);
  EXPECT_DOUBLE_EQ(progress.share(), 0.99) << "whole only once the reading has ended";
}

}  // namespace
}  // namespace shardscope::files
