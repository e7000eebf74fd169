// An output is the whole new file or what was there before: a write that fails (a full disk,
// simulated with a file-size limit; a missing directory) names the path and why, leaves the old
// file as it was, and leaves no temporary file behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <fstream>
#include <sstream>

#include "tests/support/run_cli.h"
#include "files/output_file.h"

namespace shardscope::files {
namespace {

size_t entriesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(OutputFile, WritesTheWholeTextAndNothingElse) {
  const auto dir = testing::freshTempDir("output_file_ok");
  const std::string path = dir + "/a.json";
  const mode_t umaskBefore = ::umask(022);
  const auto error = writeOutputFile(path, [](std::ostream& out) { out << "{\"x\": 1}\n"; });
  ::umask(umaskBefore);
  ASSERT_FALSE(error) << *error;
  EXPECT_EQ(testing::fileContents(path), "{\"x\": 1}\n");
  EXPECT_EQ(entriesIn(dir), 1u) << "the temporary file was renamed, not left";
  const auto perms = std::filesystem::status(path).permissions();
  EXPECT_NE(perms & std::filesystem::perms::others_read, std::filesystem::perms::none)
      << "readable by others as any new file under umask 022 (not mkstemp's 0600)";
}

// A disk that fills mid-write: with RLIMIT_FSIZE the kernel refuses the bytes past the limit
// (EFBIG), as it would with ENOSPC. The file that was there keeps its old contents.
TEST(OutputFile, AWriteThatRunsOutOfSpaceKeepsTheOldFile) {
  const auto dir = testing::freshTempDir("output_file_full");
  const std::string path = dir + "/trace.json";
  std::ofstream(path) << "old complete file\n";
  rlimit before{};
  ::getrlimit(RLIMIT_FSIZE, &before);
  auto previous = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 4096;
  ::setrlimit(RLIMIT_FSIZE, &small);
  const auto error = writeOutputFile(path, [](std::ostream& out) {
    for (int i = 0; i < 10000; ++i) out << "0123456789";
  });
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::signal(SIGXFSZ, previous);
  ASSERT_TRUE(error.has_value()) << "100 kB past a 4 kB limit must fail";
  EXPECT_NE(error->find("cannot write '" + path + "'"), std::string::npos) << *error;
  EXPECT_NE(error->find("too large"), std::string::npos) << *error;  // strerror(EFBIG)
  EXPECT_EQ(testing::fileContents(path), "old complete file\n");
  EXPECT_EQ(entriesIn(dir), 1u) << "the temporary file was removed";
}

// A streamed output (a long run's trace) is written in pieces as the run goes, and still appears
// whole or not at all: the old file stays until finish(), and one never finished leaves nothing.
TEST(OutputFile, AStreamedFileAppearsWholeAtFinishAndNotAtAllIfAbandoned) {
  const auto dir = testing::freshTempDir("output_file_streamed");
  const std::string path = dir + "/trace.json";
  std::ofstream(path) << "old\n";
  {
    OutputFile file(path);
    ASSERT_FALSE(file.openError());
    file.out() << "piece 1\n";
    file.out().flush();
    EXPECT_EQ(testing::fileContents(path), "old\n") << "nothing replaces the old file before finish()";
    EXPECT_EQ(entriesIn(dir), 2u) << "the pieces go to a temporary file beside it";
  }
  EXPECT_EQ(testing::fileContents(path), "old\n");
  EXPECT_EQ(entriesIn(dir), 1u) << "an abandoned stream removes its temporary file";

  OutputFile file(path);
  for (int i = 0; i < 3; ++i) file.out() << "piece " << i << "\n";
  const auto error = file.finish();
  ASSERT_FALSE(error) << *error;
  EXPECT_EQ(testing::fileContents(path), "piece 0\npiece 1\npiece 2\n");
  EXPECT_EQ(entriesIn(dir), 1u);
}

TEST(OutputFile, AMissingDirectoryAndADirectoryAreNamed) {
  auto error = writeOutputFile("/nonexistent-dir/x.json", [](std::ostream& out) { out << "x"; });
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("'/nonexistent-dir/x.json': No such file or directory"), std::string::npos) << *error;
  const auto dir = testing::freshTempDir("output_file_dir");
  error = writeOutputFile(dir, [](std::ostream& out) { out << "x"; });
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("it is a directory"), std::string::npos) << *error;
}

// A device is written in place: /dev/null swallows it, /dev/full fails and says so; neither is
// ever renamed over.
TEST(OutputFile, DevicesAreWrittenInPlace) {
  EXPECT_FALSE(writeOutputFile("/dev/null", [](std::ostream& out) { out << "x"; }));
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  const auto error = writeOutputFile("/dev/full", [](std::ostream& out) {
    for (int i = 0; i < 100000; ++i) out << "0123456789";
  });
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("No space left on device"), std::string::npos) << *error;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
}

// Two writers of one path at once, the first paused in the middle of its text: the path holds the
// old file until a writer finishes, then one writer's text whole, never a mix or a cut.
TEST(OutputFile, TwoWritersAtOnceLeaveOneWholeFile) {
  const auto dir = testing::freshTempDir("output_file_race");
  const std::string path = dir + "/trace.json";
  std::ofstream(path) << "old\n";
  std::promise<void> halfWritten, secondDone;
  auto first = std::async(std::launch::async, [&] {
    return writeOutputFile(path, [&](std::ostream& out) {
      out << std::string(100000, 'a');
      out.flush();
      halfWritten.set_value();
      secondDone.get_future().wait();
      out << std::string(100000, 'a') << "\n";
    });
  });
  halfWritten.get_future().wait();
  EXPECT_EQ(testing::fileContents(path), "old\n") << "a half-written file is never at the path";
  ASSERT_FALSE(writeOutputFile(path, [](std::ostream& out) { out << "second\n"; }));
  EXPECT_EQ(testing::fileContents(path), "second\n");
  secondDone.set_value();
  ASSERT_FALSE(first.get());
  EXPECT_EQ(testing::fileContents(path), std::string(200000, 'a') + "\n") << "the last to finish, whole";
  EXPECT_EQ(entriesIn(dir), 1u);
}

}  // namespace
}  // namespace shardscope::files
