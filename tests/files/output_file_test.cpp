// An output is the whole new file or what was there before: a write that fails (a full disk,
// simulated with a file-size limit; a missing directory) names the path and why, leaves the old
// file as it was, and leaves no temporary file behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <set>
#include <fstream>
#include <sstream>

#include "tests/support/run_cli.h"
#include "files/output_file.h"
#include "files/unfinished_outputs.h"

namespace shardscope::files {
namespace {

size_t entriesIn(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// A disk that fills mid-write: a 4 KiB file-size limit on this process (RLIMIT_FSIZE), past which
// the kernel refuses the bytes (EFBIG) as it would with ENOSPC; SIGXFSZ ignored meanwhile.
class SmallFileLimit {
 public:
  SmallFileLimit() {
    ::getrlimit(RLIMIT_FSIZE, &before_);
    previous_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = before_;
    small.rlim_cur = 4096;
    ::setrlimit(RLIMIT_FSIZE, &small);
  }
  ~SmallFileLimit() { lift(); }
  void lift() {
    if (lifted_) return;
    lifted_ = true;
    ::setrlimit(RLIMIT_FSIZE, &before_);
    ::signal(SIGXFSZ, previous_);
  }

 private:
  rlimit before_{};
  sighandler_t previous_ = SIG_DFL;
  bool lifted_ = false;
};

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
  SmallFileLimit limit;
  const auto error = writeOutputFile(path, [](std::ostream& out) {
    for (int i = 0; i < 10000; ++i) out << "0123456789";
  });
  limit.lift();
  ASSERT_TRUE(error.has_value()) << "100 kB past a 4 kB limit must fail";
  EXPECT_NE(error->find("cannot write '" + path + "'"), std::string::npos) << *error;
  EXPECT_NE(error->find("too large"), std::string::npos) << *error;  // strerror(EFBIG)
  EXPECT_EQ(testing::fileContents(path), "old complete file\n");
  EXPECT_EQ(entriesIn(dir), 1u) << "the temporary file was removed";
}

// A streamed output that fails in its first pieces is reported at finish() by the reason of that
// write, though much ran in between: the reason was read from errno at the end, and a full disk
// under a run's --trace came out as "No such file or directory".
TEST(OutputFile, AStreamedFileThatFillsTheDiskSaysSoAtTheEnd) {
  const auto dir = testing::freshTempDir("output_file_streamed_full");
  const std::string path = dir + "/trace.json";
  SmallFileLimit limit;
  std::optional<std::string> error;
  {
    OutputFile file(path);
    for (int i = 0; i < 10000; ++i) file.out() << "0123456789";
    file.out().flush();
    limit.lift();
    struct stat missing {};
    EXPECT_NE(::stat((dir + "/no-such-file").c_str(), &missing), 0);  // errno is ENOENT now
    file.out() << "the closing piece\n";
    error = file.finish();
  }
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("too large"), std::string::npos) << *error;  // strerror(EFBIG), the write's own
  EXPECT_EQ(error->find("No such file"), std::string::npos) << *error;
  EXPECT_EQ(entriesIn(dir), 0u) << "no partial file and no temporary one";
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

// Temporary files whose writer on this host is gone (killed by SIGKILL) are removed by the next
// writer of the path; a live writer's, another host's and other files are left alone.
TEST(OutputFile, StaleTemporaryFilesOfGoneWritersAreRemoved) {
  const auto dir = testing::freshTempDir("output_file_stale");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string ours = host;
  for (char& c : ours) c = c == '.' || c == '/' ? '_' : c;
  const std::string gone = ".t.json." + ours + "-999999999.abcdef";  // past any pid_max
  const std::string live = ".t.json." + ours + "-" + std::to_string(::getpid()) + ".ghijkl";
  const std::string otherHost = ".t.json.elsewhere-999999999.mnopqr";
  const std::string otherFile = ".u.json." + ours + "-999999999.stuvwx";
  for (const auto& name : {gone, live, otherHost, otherFile}) std::ofstream(dir + "/" + name) << "partial";
  ASSERT_FALSE(writeOutputFile(dir + "/t.json", [](std::ostream& out) { out << "x"; }));
  std::set<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"t.json", live, otherHost, otherFile}));
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

// What a second Ctrl-C's handler does as it ends the process (app/interrupt.cpp): every output
// still being written loses its partial file, one begun after it loses its own as it is made, and
// the line says which announced outputs were kept. In a child process: the handler's step cannot be
// undone.
TEST(OutputFile, ASecondCtrlCRemovesPartialFilesAndSaysWhichOutputsWereKept) {
  const auto dir = testing::freshTempDir("output_file_handler");
  auto endAtOnce = [&] {
    announceOutputs({{"summary", dir + "/s.json"}, {"trace", dir + "/t.json"}, {"memory CSV", ""}});
    if (writeOutputFile(dir + "/t.json", [](std::ostream& out) { out << "whole\n"; })) std::_Exit(2);
    OutputFile summary(dir + "/s.json");
    summary.out() << "half";
    summary.out().flush();
    removeTemporariesNow();
    OutputFile late(dir + "/late.json");  // another thread's, begun while the handler ran
    char line[512];
    describeAnnouncedOutputs(line, sizeof line);
    std::fprintf(stderr, "%s files: %zu\n", line, entriesIn(dir));
    std::fflush(stderr);
    std::_Exit(0);
  };
  EXPECT_EXIT(endAtOnce(), ::testing::ExitedWithCode(0),
              "Kept: trace [^ ]*/t\\.json\\. Not written \\(no partial file is left; a file already at such a path "
              "is as it was\\): summary [^ ]*/s\\.json\\. files: 1");
}

}  // namespace
}  // namespace shardscope::files
