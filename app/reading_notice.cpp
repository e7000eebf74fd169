#include "app/reading_notice.h"

#include <unistd.h>

namespace shardscope::app {

namespace {

std::string readingWhat(const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  return paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
}

ReadingNotice::Options toStderr() {
  ReadingNotice::Options options;
  options.terminal = isatty(STDERR_FILENO) == 1;
  return options;
}

}  // namespace

ReadingNotice::ReadingNotice(const std::string& command, const std::vector<std::string>& paths, Options options)
    : progress_(paths), prefix_(command + ": reading " + readingWhat(paths)), options_(options) {
  if (progress_.totalBytes() < options_.minBytes) return;
  if (!options_.terminal) {
    std::fprintf(options_.out, "%s (%s)\n", prefix_.c_str(), files::describeFileBytes(progress_.totalBytes()).c_str());
    std::fflush(options_.out);
    return;
  }
  ticker_ = std::thread([this] { tell(); });
}

ReadingNotice::ReadingNotice(const std::string& command, const std::vector<std::string>& paths)
    : ReadingNotice(command, paths, toStderr()) {}

ReadingNotice::~ReadingNotice() {
  if (!ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  ticker_.join();
}

// On a terminal: the line rewritten every interval, then cleared (what follows says the rest).
void ReadingNotice::tell() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, options_.every, [this] { return done_; })) {
    std::fprintf(options_.out, "\r%s: %s\033[K", prefix_.c_str(), progress_.describe().c_str());
    std::fflush(options_.out);
  }
  std::fprintf(options_.out, "\r\033[K");
  std::fflush(options_.out);
}

}  // namespace shardscope::app
