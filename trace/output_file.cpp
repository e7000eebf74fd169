#include "trace/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace shardscope::trace {

namespace {

std::string directoryOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string failure(const std::string& path, const std::string& why) {
  return "cannot write '" + path + "': " + why +
         ". Nothing was written there: free space, or choose a path in a writable directory.";
}

// A device or a pipe the user named is written as it is: there is nothing to replace atomically.
std::optional<std::string> writeInPlace(const std::string& path,
                                        const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  errno = 0;
  if (out) write(out);
  out.close();
  if (!out) return failure(path, std::strerror(errno != 0 ? errno : EIO));
  return std::nullopt;
}

}  // namespace

std::optional<std::string> writeOutputFile(const std::string& path,
                                           const std::function<void(std::ostream&)>& write) {
  if (path.empty()) return failure(path, "the path is empty");
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && S_ISDIR(existing.st_mode)) {
    return failure(path, "it is a directory; give a file name inside it");
  }
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    return writeInPlace(path, write);  // /dev/null, /dev/stdout, a FIFO: never renamed over
  }
  // Same directory as the target: a rename across file systems would not be atomic.
  std::string temporary = directoryOf(path) + "/." + path.substr(path.find_last_of('/') + 1) + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return failure(path, std::strerror(errno));
  struct RemoveUnlessRenamed {
    std::string path;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      if (!renamed) ::unlink(path.c_str());
    }
  } cleanup{temporary};

  ::close(fd);  // written by name below: the stream reports a short write as a failed state

  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  errno = 0;
  if (out) write(out);
  out.close();
  if (!out) return failure(path, std::strerror(errno != 0 ? errno : EIO));
  // A full disk may show only at fsync (delayed allocation): make sure the bytes are on disk before
  // the rename makes them the file.
  const int sync = ::open(temporary.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = sync >= 0 && ::fsync(sync) == 0;
  const int syncErrno = errno;
  if (sync >= 0) ::close(sync);
  if (!synced) return failure(path, std::strerror(syncErrno));
  // mkstemp makes the file private (0600); an output is as readable as any file the user creates.
  const mode_t umaskNow = ::umask(0);
  ::umask(umaskNow);
  ::chmod(temporary.c_str(), 0666 & ~umaskNow);
  if (::rename(temporary.c_str(), path.c_str()) != 0) return failure(path, std::strerror(errno));
  cleanup.renamed = true;
  return std::nullopt;
}

}  // namespace shardscope::trace
