#include "files/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <streambuf>
#include <utility>
#include <vector>

#include "files/unfinished_outputs.h"

namespace shardscope::files {

// A stream buffer over a file descriptor that keeps the errno of its first failed write. Read from
// errno at finish(), long after, the reason would be whatever other calls set since: a full disk
// would be reported as "No such file or directory".
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int fd) : fd_(fd), buffer_(1 << 16) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~DescriptorBuffer() override { close(); }

  int firstError() const { return error_; }
  bool close() {  // flushes; false (with firstError) when anything could not be written or closed
    if (fd_ < 0) return error_ == 0;
    const bool flushed = sync() == 0;
    if (::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return flushed && error_ == 0;
  }

 protected:
  int overflow(int c) override {
    if (sync() != 0) return traits_type::eof();
    if (c != traits_type::eof()) sputc(static_cast<char>(c));
    return traits_type::not_eof(c);
  }
  int sync() override {
    const char* at = pbase();
    while (at < pptr() && error_ == 0) {
      const ssize_t n = ::write(fd_, at, static_cast<size_t>(pptr() - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        error_ = n < 0 ? errno : EIO;
      else
        at += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0 ? 0 : -1;
  }

 private:
  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;  // errno of the first write that failed
};

namespace {

std::string directoryOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string failure(const std::string& path, const std::string& why, bool replaced = true) {
  return "cannot write '" + path + "': " + why +
         (replaced ? ". Nothing was written there, and a file already there is as it was: free space, or choose a path "
                     "in a writable directory."
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

// A temporary file's name beside its target: ".NAME.HOST-PID.XXXXXX". The host and pid tell whose
// it is: a writer killed by SIGKILL leaves its file (a second Ctrl-C removes its own:
// files/unfinished_outputs.h), and the next writer of the same path on the same host removes those
// whose process is gone. Another host's files (a shared trace directory) are never touched.
std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "host";
  std::string host = name;
  for (char& c : host) {
    if (c == '/' || c == '.') c = '_';
  }
  return host;
}

std::string temporaryPrefix(const std::string& path) {
  return "." + path.substr(path.find_last_of('/') + 1) + "." + hostName() + "-";
}

void removeStaleTemporaries(const std::string& path, const std::string& prefix) {
  const std::string dir = directoryOf(path);
  DIR* listing = ::opendir(dir.c_str());
  if (!listing) return;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dot = name.find('.', prefix.size());
    const std::string pid = name.substr(prefix.size(), dot == std::string::npos ? 0 : dot - prefix.size());
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (name.size() != dot + 7) continue;  // mkstemp's six characters after the dot
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(listing);
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
    const std::string prefix = temporaryPrefix(path_);
    removeStaleTemporaries(path_, prefix);
    temporary_ = directoryOf(path_) + "/" + prefix + std::to_string(::getpid()) + ".XXXXXX";
    // The interrupt signals wait while the file is made and remembered: a handler that ran on this
    // thread between the two would not know of the file, and leave it behind.
    sigset_t interrupts, before;
    sigemptyset(&interrupts);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupts, s);
    ::pthread_sigmask(SIG_BLOCK, &interrupts, &before);
    fd_ = ::mkstemp(temporary_.data());
    const int made = errno;
    if (fd_ >= 0) temporarySlot_ = rememberTemporary(temporary_);
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (fd_ < 0) {
      openError_ = failure(path_, std::strerror(made));
      temporary_.clear();
    }
  }
  // Everything goes through the descriptor opened here, never the name again: nobody can swap the
  // file under us between creating and writing it. The buffer closes the descriptor.
  if (fd_ >= 0) buffer_ = std::make_unique<DescriptorBuffer>(fd_);
  out_ = std::make_unique<std::ostream>(buffer_.get());  // no buffer: a bad stream that drops writes
  if (!buffer_) out_->setstate(std::ios::badbit);
}

OutputFile::~OutputFile() {
  out_.reset();
  buffer_.reset();
  if (!finished_ && !temporary_.empty()) ::unlink(temporary_.c_str());
  forgetTemporary(temporarySlot_);
}

std::optional<std::string> OutputFile::finish() {
  if (openError_) return openError_;
  finished_ = true;
  const bool inPlace = temporary_.empty();
  auto failed = [&](int error) {
    if (!inPlace) ::unlink(temporary_.c_str());
    forgetTemporary(std::exchange(temporarySlot_, -1));
    return failure(path_, std::strerror(error != 0 ? error : EIO), /*replaced=*/!inPlace);
  };
  // The first write that failed says why ("No space left on device"), however long ago it was.
  out_->flush();
  if (!*out_ || buffer_->firstError() != 0) return failed(buffer_->firstError());
  if (inPlace) {
    if (!buffer_->close()) return failed(buffer_->firstError());
    outputWritten(path_);
    return std::nullopt;
  }
  // A full disk may show only at fsync (delayed allocation): the bytes are on disk before the
  // rename makes them the file. mkstemp made it private (0600); an output is as readable as any
  // file the user creates.
  if (::fsync(fd_) != 0) return failed(errno);
  (void)::fchmod(fd_, 0666 & ~currentUmask());
  if (!buffer_->close()) return failed(buffer_->firstError());
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) return failed(errno);
  outputWritten(path_);
  forgetTemporary(std::exchange(temporarySlot_, -1));
  return std::nullopt;
}

FileStamp stampOf(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  return {true, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, static_cast<int64_t>(st.st_size)};
}

std::string changedMeanwhile(const std::string& path, const FileStamp& before, const std::string& what) {
  if (path.empty() || stampOf(path) == before) return "";
  return "'" + path +
         "' was written by someone else while this run went (another run given the same path?); "
         "this run's " +
         what + " replaces it. Give each run its own path to keep both.";
}

std::optional<std::string> writeOutputFile(const std::string& path, const std::function<void(std::ostream&)>& write) {
  OutputFile file(path);
  if (file.openError()) return file.openError();
  errno = 0;
  write(file.out());
  return file.finish();
}

}  // namespace shardscope::files
