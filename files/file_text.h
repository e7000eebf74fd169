// Reads a file a user names as text, gunzipping it when it is gzip-compressed (traces brought back
// from the GPU machine come as .json.gz; Perfetto opens those as they are), never more than a stated
// size: /dev/zero, or a small gzip that inflates to gigabytes, is refused, not read until memory
// runs out.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace shardscope::files {

// The most each kind of file is read to (decompressed): a trace or summary takes about 12x its size
// in memory once parsed; a config or lesson is a few hundred bytes.
constexpr size_t kMaxTraceBytes = size_t{1} << 30;   // 1 GiB
constexpr size_t kMaxSummaryBytes = size_t{256} << 20;
constexpr size_t kMaxConfigBytes = size_t{1} << 20;  // 1 MiB

// The file's text (decompressed if it starts with gzip's magic bytes). With `prefix`, at most that
// many bytes of it (the rest is not read). Nothing, with `error` saying why and what to do, when it
// cannot be read, is a directory, or holds more than `maxBytes`.
std::optional<std::string> readFileText(const std::string& path, std::string& error, size_t maxBytes,
                                        size_t prefix = std::string::npos);

}  // namespace shardscope::files
