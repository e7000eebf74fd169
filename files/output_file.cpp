#include "files/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <fstream>

namespace shardscope::files {

namespace {

std::string directoryOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string failure(const std::string& path, const std::string& why, bool replaced = true) {
  return "cannot write '" + path + "': " + why +
         (replaced ? ". Nothing was written there: free space, or choose a path in a writable directory."
                   : ". Choose a path in a writable directory.");
}

// The process's file-creation mask, read without changing it (umask() can only set it, and
// setting it and back would race with any thread creating a file meanwhile).
mode_t currentUmask() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Umask:") {
      std::string octal;
      status >> octal;
      return static_cast<mode_t>(std::stoul(octal, nullptr, 8));
    }
    status.ignore(4096, '\n');
  }
  return 022;
}

// A device or a pipe the user named is written as it is: there is nothing to replace atomically.
std::optional<std::string> writeInPlace(const std::string& path,
                                        const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path, std::ios::binary);
  errno = 0;
  if (out) write(out);
  out.close();
  if (!out) return failure(path, std::strerror(errno != 0 ? errno : EIO), /*replaced=*/false);
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

  // Everything goes through the descriptor mkstemp opened, never the name again: nobody can swap
  // the file under us between creating and writing it. The buffer closes the descriptor.
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);
  std::ostream out(&buffer);
  errno = 0;
  write(out);
  out.flush();
  if (!out) return failure(path, std::strerror(errno != 0 ? errno : EIO));
  // A full disk may show only at fsync (delayed allocation): the bytes are on disk before the
  // rename makes them the file. mkstemp made it private (0600); an output is as readable as any
  // file the user creates.
  if (::fsync(fd) != 0) return failure(path, std::strerror(errno));
  (void)::fchmod(fd, 0666 & ~currentUmask());
  if (buffer.close() == nullptr) return failure(path, std::strerror(errno != 0 ? errno : EIO));
  if (::rename(temporary.c_str(), path.c_str()) != 0) return failure(path, std::strerror(errno));
  cleanup.renamed = true;
  return std::nullopt;
}

}  // namespace shardscope::files
