// Writes an output file (a trace, a summary, a CSV) so that the path holds either the complete new
// file or what it held before, never a truncated one: the text goes to a temporary file in the same
// directory, is flushed to disk, and is renamed into place. A full disk, or two runs writing the
// same path at once, cannot leave half a JSON behind.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

namespace shardscope::files {

class DescriptorBuffer;

// Which file a path names and when it last changed: two stamps of one path differ when someone
// wrote or replaced it in between (another run given the same --summary).
struct FileStamp {
  bool exists = false;
  uint64_t device = 0, inode = 0;
  int64_t modifiedNs = 0;
  int64_t bytes = 0;
  bool operator==(const FileStamp& o) const {
    return exists == o.exists && device == o.device && inode == o.inode && modifiedNs == o.modifiedNs &&
           bytes == o.bytes;
  }
};
FileStamp stampOf(const std::string& path);
// A warning when `path` changed since `before` (its stamp when a run started), as a run would
// replace it: "'s.json' was written by someone else while this run went (another run given the
// same path?); this run's summary replaces it". Empty when it did not, or for no path.
std::string changedMeanwhile(const std::string& path, const FileStamp& before, const std::string& what);

// Writes what `write` puts out to `path`. Nothing on success; otherwise one line naming the path,
// what went wrong (e.g. "No space left on device") and what to do. The temporary file is removed
// on every path out, and the file already at `path`, if any, is left as it was.
std::optional<std::string> writeOutputFile(const std::string& path, const std::function<void(std::ostream&)>& write);

// The same, written a piece at a time as a run goes (a long run's trace streams to disk instead of
// being held until the end): open, write to out() as often as needed, then finish(). Destroyed
// unfinished (a failed run that writes no output, an exception), the temporary file is removed.
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& out() { return *out_; }
  // Why the file could not be opened, if it could not; out() then discards what it is given.
  const std::optional<std::string>& openError() const { return openError_; }
  // Flushes, syncs and renames it into place; the error, if any of that (or a write) failed.
  std::optional<std::string> finish();

 private:
  std::string path_;
  std::string temporary_;  // empty when written in place (a device or a pipe) or not opened
  int temporarySlot_ = -1;  // where a second Ctrl-C's handler finds it (files/unfinished_outputs.h)
  int fd_ = -1;
  std::unique_ptr<DescriptorBuffer> buffer_;  // remembers why its first write failed
  std::unique_ptr<std::ostream> out_;
  std::optional<std::string> openError_;
  bool finished_ = false;
};

}  // namespace shardscope::files
