// Why a path cannot be read, said before a reader opens it (a FIFO, a device, a file the user may
// not read) and where a gzip file breaks (corrupt at a byte, cut short, a wrong checksum).
#include "files/readable_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "tests/support/run_cli.h"

namespace shardscope::files {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// cannotOpenReason(path) as the user `nobody` sees it, where this test runs as root (whom no
// permission stops): asked in a child process that has given up root.
std::string reasonAsNobody(const std::string& path) {
  int pipeEnds[2];
  if (::pipe(pipeEnds) != 0) return "no pipe";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipeEnds[0]);
    const std::string reason =
        ::setgid(65534) == 0 && ::setuid(65534) == 0 ? cannotOpenReason(path) : "cannot become nobody";
    (void)!::write(pipeEnds[1], reason.data(), reason.size());
    ::_exit(0);
  }
  ::close(pipeEnds[1]);
  std::string reason;
  char chunk[512];
  for (ssize_t n; (n = ::read(pipeEnds[0], chunk, sizeof chunk)) > 0;) reason.append(chunk, static_cast<size_t>(n));
  ::close(pipeEnds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return reason;
}

TEST(ReadablePath, FilesAndDirectoriesAreReadableAndAMissingPathIsLeftToTheCaller) {
  const auto dir = testing::freshTempDir("readable_path");
  std::ofstream(dir + "/t.json") << "{}";
  EXPECT_EQ(cannotOpenReason(dir + "/t.json"), "");
  EXPECT_EQ(cannotOpenReason(dir), "");
  EXPECT_EQ(cannotOpenReason(dir + "/absent.json"), "") << "the callers say 'does not exist' their own way";
}

// A FIFO with no writer would block open() for ever: it is named from a stat(), never opened (this
// test would hang otherwise).
TEST(ReadablePath, AFifoAndADeviceAreRefusedWithoutBeingOpened) {
  const auto dir = testing::freshTempDir("readable_path_fifo");
  const std::string fifo = dir + "/t.pftrace";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string why = cannotOpenReason(fifo);
  EXPECT_TRUE(has(why, "'" + fifo + "' is a pipe (a FIFO, or a shell's <(...))")) << why;
  EXPECT_TRUE(has(why, "Write the stream to a file first")) << why;
  const std::string device = cannotOpenReason("/dev/null");
  EXPECT_TRUE(has(device, "'/dev/null' is a character device, not a saved record: name a file")) << device;
}

TEST(ReadablePath, PermissionDeniedIsSaidWithTheFix) {
  EXPECT_EQ(openFailureReason("/x/t.json", EACCES, false),
            "'/x/t.json' cannot be read: permission denied: read it as a user who may, or let yours (chmod a+r "
            "'/x/t.json').");
  EXPECT_TRUE(has(openFailureReason("/x/job", EACCES, true), "(chmod a+rx '/x/job')"));
  EXPECT_EQ(openFailureReason("/x/t.json", EIO, false), "'/x/t.json' cannot be opened: Input/output error.");

  // The real thing: a file and a directory their owner keeps to itself.
  const auto dir = testing::freshTempDir("readable_path_denied");
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // mkdtemp's 0700 would deny the path, not the file
  const std::string file = dir + "/t.json", job = dir + "/job";
  std::ofstream(file) << "{}";
  ASSERT_EQ(::chmod(file.c_str(), 0), 0);
  ASSERT_EQ(::mkdir(job.c_str(), 0700), 0);
  const auto asUser = [](const std::string& path) {
    return ::geteuid() == 0 ? reasonAsNobody(path) : cannotOpenReason(path);
  };
  EXPECT_TRUE(has(asUser(file), "'" + file + "' cannot be read: permission denied")) << asUser(file);
  EXPECT_TRUE(has(asUser(job), "'" + job + "' cannot be read: permission denied")) << asUser(job);
}

// gzip's 10-byte header (deflate, no name), as gzip writes it.
const std::string kGzipHeader("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);

std::string gzipOf(const std::string& dir, const std::string& text) {
  std::ofstream(dir + "/plain.json", std::ios::binary) << text;
  (void)testing::runCommand({"gzip", "-kf", dir + "/plain.json"});
  return testing::fileContents(dir + "/plain.json.gz");
}

std::string damageOf(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return gzipDamage(path);
}

TEST(ReadablePath, AGzipFileIsSaidDamagedWhereItBreaks) {
  const auto dir = testing::freshTempDir("readable_path_gzip");
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"ph\": \"X\", \"ts\": " + std::to_string(i * 7 % 1000) + "},\n";
  const std::string whole = gzipOf(dir, text);
  ASSERT_GT(whole.size(), 1000u);
  const std::string path = dir + "/t.json.gz";
  EXPECT_EQ(damageOf(path, whole), "");
  EXPECT_EQ(damageOf(path, whole + whole), "") << "members one after another are one file";
  EXPECT_EQ(damageOf(path, whole + "trailing bytes"), "") << "ignored after the last member, as gunzip does";
  EXPECT_EQ(damageOf(path, text), "") << "not gzip at all";

  const std::string cut = damageOf(path, whole.substr(0, 600));
  EXPECT_EQ(cut, "'" + path +
                     "' is a damaged gzip file: it ends at byte 600, inside its compressed data (cut short): copy it "
                     "again, or open the uncompressed file.");
  // Its CRC-32 (the trailer's first 4 bytes) made wrong: the data inflates, the check fails.
  std::string badCrc = whole;
  badCrc[badCrc.size() - 8] = static_cast<char>(badCrc[badCrc.size() - 8] ^ 0x55);
  const std::string crc = damageOf(path, badCrc);
  EXPECT_TRUE(has(crc, "is a damaged gzip file: corrupt at byte " + std::to_string(whole.size() - 4) + " of " +
                           std::to_string(whole.size()) + " (incorrect data check)"))
      << crc;
  // A header, then noise: 0xff is a final block of the reserved type 3.
  const std::string noise = damageOf(path, kGzipHeader + std::string(3000, '\xff'));
  EXPECT_TRUE(has(noise, "is a damaged gzip file: corrupt at byte 11 of 3010 (invalid block type)")) << noise;
}

}  // namespace
}  // namespace shardscope::files
