#include "files/read_progress.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace shardscope::files {

namespace fs = std::filesystem;

std::optional<uint64_t> processReadBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return std::nullopt;
}

namespace {

uint64_t bytesUnder(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code error;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, error), end;
  for (; !error && it != end; it.increment(error)) {
    if (it.depth() >= 1) it.disable_recursion_pending();  // dir/file and dir/sub/file
    std::error_code sizeError;
    if (it->is_regular_file(sizeError)) total += it->file_size(sizeError);
  }
  return total;
}

}  // namespace

uint64_t bytesOfPaths(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const auto& path : paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      total += bytesUnder(path);
    } else if (const auto size = fs::file_size(path, error); !error) {
      total += size;
    }
  }
  return total;
}

ReadProgress::ReadProgress(const std::vector<std::string>& paths)
    : totalBytes_(bytesOfPaths(paths)), readAtStart_(processReadBytes()) {}

double ReadProgress::share() const {
  const auto now = processReadBytes();
  if (!now || !readAtStart_ || totalBytes_ == 0) return -1;
  const double read = static_cast<double>(*now - std::min(*now, *readAtStart_));
  return std::min(0.99, read / static_cast<double>(totalBytes_));
}

}  // namespace shardscope::files
