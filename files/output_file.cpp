#include "files/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  struct stat existing {};
  const bool exists = !path_.empty() && ::stat(path_.c_str(), &existing) == 0;
  if (path_.empty()) {
    openError_ = failure(path_, "the path is empty");
  } else if (exists && S_ISDIR(existing.st_mode)) {
    openError_ = failure(path_, "it is a directory; give a file name inside it");
  } else if (exists && !S_ISREG(existing.st_mode)) {
    // A device or a pipe the user named (/dev/null, /dev/stdout, a FIFO) is written as it is:
    // there is nothing to replace atomically, and it is never renamed over.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) openError_ = failure(path_, std::strerror(errno), /*replaced=*/false);
  } else {
    // Same directory as the target: a rename across file systems would not be atomic.
    temporary_ = directoryOf(path_) + "/." + path_.substr(path_.find_last_of('/') + 1) + ".XXXXXX";
    fd_ = ::mkstemp(temporary_.data());
    if (fd_ < 0) {
      openError_ = failure(path_, std::strerror(errno));
      temporary_.clear();
    }
  }
  // Everything goes through the descriptor opened here, never the name again: nobody can swap the
  // file under us between creating and writing it. The buffer closes the descriptor.
  if (fd_ >= 0) buffer_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd_, std::ios::out | std::ios::binary);
  out_ = std::make_unique<std::ostream>(buffer_.get());  // no buffer: a bad stream that drops writes
  if (!buffer_) out_->setstate(std::ios::badbit);
}

OutputFile::~OutputFile() {
  out_.reset();
  buffer_.reset();
  if (!finished_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

std::optional<std::string> OutputFile::finish() {
  if (openError_) return openError_;
  finished_ = true;
  const bool inPlace = temporary_.empty();
  auto failed = [&](int error) {
    if (!inPlace) ::unlink(temporary_.c_str());
    return failure(path_, std::strerror(error != 0 ? error : EIO), /*replaced=*/!inPlace);
  };
  // A write that failed already left its reason in errno (as writeOutputFile's callers expect:
  // "No space left on device"); otherwise the flush's own.
  if (!*out_) return failed(errno);
  errno = 0;
  out_->flush();
  if (!*out_) return failed(errno);
  if (inPlace) {
    if (buffer_->close() == nullptr) return failed(errno);
    return std::nullopt;
  }
  // A full disk may show only at fsync (delayed allocation): the bytes are on disk before the
  // rename makes them the file. mkstemp made it private (0600); an output is as readable as any
  // file the user creates.
  if (::fsync(fd_) != 0) return failed(errno);
  (void)::fchmod(fd_, 0666 & ~currentUmask());
  if (buffer_->close() == nullptr) return failed(errno);
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) return failed(errno);
  return std::nullopt;
}

std::optional<std::string> writeOutputFile(const std::string& path,
                                           const std::function<void(std::ostream&)>& write) {
  OutputFile file(path);
  if (file.openError()) return file.openError();
  errno = 0;
  write(file.out());
  return file.finish();
}

}  // namespace shardscope::files
