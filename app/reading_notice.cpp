#include "app/reading_notice.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include "trace/format.h"

namespace shardscope::app {

namespace {

std::string readingWhat(const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  return paths.front() + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
}

// A terminal's line names the first path's last part ("t.pftrace", "job"): a long path would wrap,
// and a wrapped line cannot be rewritten in place.
std::string shortWhat(const std::vector<std::string>& paths) {
  if (paths.empty()) return "";
  std::string first = paths.front();
  while (first.size() > 1 && first.back() == '/') first.pop_back();
  const size_t slash = first.rfind('/');
  if (slash != std::string::npos && slash + 1 < first.size()) first = first.substr(slash + 1);
  return first + (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more" : "");
}

// The columns of the terminal `out` writes to, or 0 where it cannot tell.
size_t terminalColumns(std::FILE* out) {
  winsize size{};
  return ioctl(fileno(out), TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

ReadingNotice::Options toStderr() {
  ReadingNotice::Options options;
  options.terminal = isatty(STDERR_FILENO) == 1;
  return options;
}

}  // namespace

std::string describeReading(const files::ReadProgress& progress) {
  const std::string size = trace::formatBytes(static_cast<double>(progress.totalBytes()));
  const double share = progress.share();
  return share < 0 ? size : std::to_string(static_cast<int>(share * 100)) + "% of " + size;
}

ReadingNotice::ReadingNotice(const std::string& command, const std::vector<std::string>& paths, Options options)
    : progress_(paths),
      prefix_(command + ": reading " + (options.terminal ? shortWhat(paths) : readingWhat(paths))),
      options_(options) {
  if (progress_.totalBytes() >= options_.minBytes) ticker_ = std::thread([this] { tell(); });
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

// Nothing for a reading over within the first interval (a file refused on its first bytes). Then,
// on a terminal, the line rewritten every interval and cleared at the end (what follows says the
// rest); in a log, one line.
void ReadingNotice::tell() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto ended = [this] { return done_; };
  if (wake_.wait_for(lock, options_.every, ended)) return;
  if (!options_.terminal) {
    std::fprintf(options_.out, "%s (%s)\n", prefix_.c_str(),
                 trace::formatBytes(static_cast<double>(progress_.totalBytes())).c_str());
    std::fflush(options_.out);
    return;
  }
  const size_t columns = terminalColumns(options_.out);
  do {
    std::string line = prefix_ + ": " + describeReading(progress_);
    if (columns > 1 && line.size() >= columns) line.resize(columns - 1);  // one row, or it cannot be rewritten
    std::fprintf(options_.out, "\r%s\033[K", line.c_str());
    std::fflush(options_.out);
  } while (!wake_.wait_for(lock, options_.every, ended));
  std::fprintf(options_.out, "\r\033[K");
  std::fflush(options_.out);
}

}  // namespace shardscope::app
