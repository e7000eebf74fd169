// A file read as a stream, a chunk at a time: the same text as the file holds (gunzipped when
// compressed), and an end with a message past the stated size or at damaged gzip.
#include <gtest/gtest.h>

#include <fstream>
#include <istream>
#include <iterator>

#include "files/file_text.h"
#include "tests/support/run_cli.h"

namespace shardscope::files {
namespace {

std::string readAll(FileTextStream& file) {
  std::istream in(&file);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string someText(size_t bytes) {
  std::string text;
  for (size_t i = 0; text.size() < bytes; ++i) text += std::to_string(i) + ",";
  return text.substr(0, bytes);
}

TEST(FileTextStream, ReadsPlainAndGzipFilesWhole) {
  const auto dir = testing::freshTempDir("file_text_stream");
  const std::string text = someText(300000);  // several chunks of 64 KiB
  std::ofstream(dir + "/a.json", std::ios::binary) << text;
  FileTextStream plain(dir + "/a.json", 1 << 20);
  EXPECT_EQ(readAll(plain), text);
  EXPECT_EQ(plain.error(), "");
  ASSERT_EQ(testing::runCommand({"gzip", "-k", dir + "/a.json"}).exitCode, 0);
  FileTextStream gz(dir + "/a.json.gz", 1 << 20);
  EXPECT_EQ(readAll(gz), text);
  EXPECT_EQ(gz.error(), "");
}

TEST(FileTextStream, EndsWithAMessagePastItsLimitOrAtDamage) {
  const auto dir = testing::freshTempDir("file_text_stream_limits");
  std::ofstream(dir + "/big.json", std::ios::binary) << someText(200000);
  FileTextStream big(dir + "/big.json", 100000);
  EXPECT_LE(readAll(big).size(), 100000u);
  EXPECT_NE(big.error().find("holds more than 100000 B, the most shardscope reads"), std::string::npos) << big.error();

  std::ofstream(dir + "/broken.json.gz", std::ios::binary) << "\x1f\x8b not really gzip, and then some more bytes";
  FileTextStream broken(dir + "/broken.json.gz", 1 << 20);
  readAll(broken);
  EXPECT_NE(broken.error().find("is a damaged gzip file"), std::string::npos) << broken.error();

  FileTextStream missing(dir + "/absent.json", 1 << 20);
  EXPECT_EQ(readAll(missing), "");
  EXPECT_NE(missing.error().find("check that the file exists"), std::string::npos);
  FileTextStream directory(dir, 1 << 20);
  EXPECT_NE(directory.error().find("is a directory"), std::string::npos);
}

// gzread gives what it could inflate of a file cut short, then 0 as at a whole file's end: the
// readers must still say that it was cut, and where, not hand on a shorter text.
TEST(FileTextStream, AGzipFileCutShortIsSaidWhereItEnds) {
  const auto dir = testing::freshTempDir("file_text_cut");
  std::ofstream(dir + "/a.json", std::ios::binary) << someText(300000);
  ASSERT_EQ(testing::runCommand({"gzip", "-k", dir + "/a.json"}).exitCode, 0);
  const std::string whole = testing::fileContents(dir + "/a.json.gz");
  const std::string cutPath = dir + "/cut.json.gz";
  std::ofstream(cutPath, std::ios::binary) << whole.substr(0, whole.size() / 2);
  const std::string expected = "'" + cutPath + "' is a damaged gzip file: it ends at byte " +
                               std::to_string(whole.size() / 2) + ", inside its compressed data (cut short)";
  FileTextStream stream(cutPath, 1 << 20);
  readAll(stream);
  EXPECT_NE(stream.error().find(expected), std::string::npos) << stream.error();
  std::string error;
  EXPECT_FALSE(readFileText(cutPath, error, 1 << 20)) << "a cut file is not read as a shorter one";
  EXPECT_NE(error.find(expected), std::string::npos) << error;
}

}  // namespace
}  // namespace shardscope::files
