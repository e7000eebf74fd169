// How far a command has read the recordings it was asked to open, with no hook in any reader:
// Linux counts every byte a process reads (/proc/self/io, rchar), through a stream or gzip alike,
// and the files' sizes are known before the reading starts. An estimate: other reads meanwhile (a
// font, a socket, a file's first bytes read twice to tell its kind) make it run ahead, and a
// folder's files that no reader opens make it lag; it stays at 99% at most until the reading ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::files {

// Bytes this process has read so far (rchar of /proc/self/io), or nothing where it cannot tell.
std::optional<uint64_t> processReadBytes();

// The bytes of `paths`: a file's size, a directory's files (two levels down) added up, whether
// or not a reader opens them all.
uint64_t bytesOfPaths(const std::vector<std::string>& paths);

class ReadProgress {
 public:
  // Counting from now, of `paths`.
  explicit ReadProgress(const std::vector<std::string>& paths);
  uint64_t totalBytes() const { return totalBytes_; }
  // The share read so far, 0 to 0.99; -1 where the process's reads cannot be counted.
  double share() const;

 private:
  uint64_t totalBytes_ = 0;
  std::optional<uint64_t> readAtStart_;
};

}  // namespace shardscope::files
