#include "files/readable_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#ifdef SHARDSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace shardscope::files {

namespace {

// What a stat() mode that is neither a regular file nor a directory is, in a user's words.
std::string kindOf(mode_t mode) {
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "neither a file nor a directory";
}

}  // namespace

std::string openFailureReason(const std::string& path, int err, bool directory) {
  if (err == EACCES || err == EPERM) {
    return "'" + path + "' cannot be read: permission denied: read it as a user who may, or let yours (chmod a+" +
           (directory ? "rx" : "r") + " '" + path + "').";
  }
  return "'" + path + "' cannot be opened: " + std::strerror(err) + ".";
}

std::string cannotOpenReason(const std::string& path) {
  struct stat there {};
  if (::stat(path.c_str(), &there) != 0) {
    // Not there (or a path through a file): the callers say so, with what to name instead.
    if (errno == ENOENT || errno == ENOTDIR) return "";
    return openFailureReason(path, errno, false);
  }
  if (S_ISFIFO(there.st_mode)) {
    return "'" + path +
           "' is a pipe (a FIFO, or a shell's <(...)), which gives its bytes once: shardscope reads a "
           "record's first bytes to tell what it is, then all of it, so it cannot read a pipe. Write the "
           "stream to a file first (... > t.pftrace) and name that file.";
  }
  const bool directory = S_ISDIR(there.st_mode);
  if (!directory && !S_ISREG(there.st_mode)) {
    return "'" + path + "' is " + kindOf(there.st_mode) +
           ", not a saved record: name a file (a trace or a summary) or a job's directory.";
  }
  // A directory is listed (read) and its files opened (search): both are needed.
  if (directory && ::access(path.c_str(), R_OK | X_OK) != 0) return openFailureReason(path, errno, true);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return openFailureReason(path, errno, directory);
  ::close(fd);
  return "";
}

std::string gzipDamage(const std::string& path) {
#ifdef SHARDSCOPE_HAVE_ZLIB
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const uint64_t size = in ? static_cast<uint64_t>(in.tellg()) : 0;
  in.seekg(0);
  unsigned char input[1 << 16], output[1 << 16];
  z_stream z{};
  uint64_t fed = 0;  // bytes of the file given to zlib so far
  // More of the file after what zlib has not yet taken (kept at the front: a member's two magic
  // bytes may straddle two reads). False when nothing is left at all.
  const auto refill = [&] {
    const uInt kept = z.avail_in;
    if (kept > 0 && z.next_in != input) std::memmove(input, z.next_in, kept);
    in.read(reinterpret_cast<char*>(input) + kept, static_cast<std::streamsize>(sizeof input - kept));
    z.next_in = input;
    z.avail_in = kept + static_cast<uInt>(in.gcount());
    fed += static_cast<uint64_t>(in.gcount());
    return z.avail_in > 0;
  };
  const auto isMember = [&] { return z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b; };
  if (!refill() || !isMember()) return "";
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return "";  // 16: a gzip wrapper, its CRC-32 checked
  int rc = Z_OK;
  std::string broken;  // zlib's words for the damage
  while (broken.empty()) {
    if (z.avail_in == 0 && !refill()) break;
    z.next_out = output;
    z.avail_out = sizeof output;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Members may follow one another; bytes after the last that are not one are ignored, as
      // gunzip and zlib's gzread ignore them.
      if (z.avail_in < 2) refill();
      if (!isMember()) break;
      inflateReset(&z);
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_in == 0)) {
      broken = z.msg ? z.msg : "data error";
    }
  }
  const uint64_t at = fed - z.avail_in;  // the first byte zlib had not taken
  inflateEnd(&z);
  const std::string head = "'" + path + "' is a damaged gzip file: ";
  const std::string fix = ": copy it again, or open the uncompressed file.";
  if (!broken.empty()) {
    return head + "corrupt at byte " + std::to_string(at) + " of " + std::to_string(size) + " (" + broken + ")" + fix;
  }
  if (rc != Z_STREAM_END)
    return head + "it ends at byte " + std::to_string(size) + ", inside its compressed data (cut short)" + fix;
#else
  (void)path;
#endif
  return "";
}

}  // namespace shardscope::files
