// Writes an output file (a trace, a summary, a CSV) so that the path holds either the complete new
// file or what it held before, never a truncated one: the text goes to a temporary file in the same
// directory, is flushed to disk, and is renamed into place. A full disk, or two runs writing the
// same path at once, cannot leave half a JSON behind.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace shardscope::files {

// Writes what `write` puts out to `path`. Nothing on success; otherwise one line naming the path,
// what went wrong (e.g. "No space left on device") and what to do. The temporary file is removed
// on every path out, and the file already at `path`, if any, is left as it was.
std::optional<std::string> writeOutputFile(const std::string& path,
                                           const std::function<void(std::ostream&)>& write);

}  // namespace shardscope::files
