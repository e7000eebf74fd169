// Reads a saved trace or summary as text, gunzipping it when it is gzip-compressed: traces
// brought back from the GPU machine come as .json.gz (Perfetto opens those as they are).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace shardscope::trace {

// The file's text (decompressed if it starts with gzip's magic bytes), at most `limit` bytes of
// it; nothing, with `error` saying why and what to do, when it cannot be read.
std::optional<std::string> readFileText(const std::string& path, std::string& error,
                                        size_t limit = std::string::npos);

}  // namespace shardscope::trace
