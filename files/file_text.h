// Reads a file a user names as text, gunzipping it when it is gzip-compressed (traces brought back
// from the GPU machine come as .json.gz; Perfetto opens those as they are), never more than a stated
// size: /dev/zero, or a small gzip that inflates to gigabytes, is refused, not read until memory
// runs out.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <streambuf>
#include <string>

namespace shardscope::files {

// The most each kind of file is read to (decompressed). A trace is parsed as it is read and held
// as its recording, so it is read as far as memory holds that (files/host_memory.h), with no cap
// of its own; a trace's head is sniffed within kTraceHeadBytes. A summary is parsed whole, about
// 12x its size in memory; a config or lesson is a few hundred bytes.
constexpr size_t kTraceHeadBytes = size_t{4} << 30;  // what a prefix read of a trace may pass over
constexpr size_t kMaxSummaryBytes = size_t{256} << 20;
constexpr size_t kMaxConfigBytes = size_t{1} << 20;  // 1 MiB

// The file's text (decompressed if it starts with gzip's magic bytes). With `prefix`, at most that
// many bytes of it (the rest is not read). Nothing, with `error` saying why and what to do, when it
// cannot be read, is a directory, or holds more than `maxBytes`.
std::optional<std::string> readFileText(const std::string& path, std::string& error, size_t maxBytes,
                                        size_t prefix = std::string::npos);

// Why readFileText could not read `path`, worded to follow its name ("'PATH' " + this): missing, a
// directory, more than `maxBytes` (its size, the limit for `kind`, then `shrink`: how to make it
// smaller), or the reader's own `error`.
std::string unreadableReason(const std::string& path, const std::string& error, size_t maxBytes,
                             const std::string& kind, const std::string& shrink);

// The same file as a stream, read a chunk at a time (a trace of gigabytes is parsed as it is
// read, never held whole), gunzipped when compressed. It ends early, with error() saying why,
// when the file cannot be read on or holds more than `maxBytes` (`limitWhy`: what that limit is,
// worded to follow "holds more than N, "; else "the most shardscope reads of such a file").
class FileTextStream : public std::streambuf {
 public:
  FileTextStream(const std::string& path, size_t maxBytes, std::string limitWhy = "");
  ~FileTextStream() override;
  FileTextStream(const FileTextStream&) = delete;
  FileTextStream& operator=(const FileTextStream&) = delete;
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override;

 private:
  struct Source;
  std::unique_ptr<Source> source_;
  std::string path_;
  size_t maxBytes_;
  std::string limitWhy_;
  size_t read_ = 0;
  std::string error_;
  char buffer_[1 << 16];
};

}  // namespace shardscope::files
