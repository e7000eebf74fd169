#include "files/file_text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#ifdef SHARDSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace shardscope::files {

namespace {

bool startsWithGzipMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

// "1 GiB", "256 MiB", "1 MiB": the limits are whole powers of two.
std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " B";
}

std::optional<std::string> readFileText(const std::string& path, std::string& error, size_t maxBytes, size_t prefix) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = "'" + path + "' is a directory: name a file in it.";
    return std::nullopt;
  }
  if (!std::ifstream(path)) {
    error = "cannot read '" + path + "': check that the file exists.";
    return std::nullopt;
  }
  // Read one byte past the cap to tell "exactly the cap" from "more than it".
  const size_t want = prefix != std::string::npos ? prefix : maxBytes + 1;
  auto tooLarge = [&] {
    error = "'" + path + "' holds more than " + sizeText(maxBytes) + (startsWithGzipMagic(path) ? " once decompressed" : "") +
            ", the most shardscope reads of such a file: is it the right file?";
    return std::nullopt;
  };
  std::string text;
  if (startsWithGzipMagic(path)) {
#ifdef SHARDSCOPE_HAVE_ZLIB
    gzFile in = gzopen(path.c_str(), "rb");
    if (!in) {
      error = "cannot open '" + path + "' as gzip.";
      return std::nullopt;
    }
    char buffer[1 << 16];
    while (text.size() < want) {
      const int n = gzread(in, buffer, static_cast<unsigned>(std::min(sizeof buffer, want - text.size())));
      if (n < 0) {
        int code = 0;
        error = "'" + path + "' is a damaged gzip file (" + gzerror(in, &code) +
                "): copy it again, or open the uncompressed .json.";
        gzclose(in);
        return std::nullopt;
      }
      if (n == 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
    gzclose(in);
    if (prefix == std::string::npos && text.size() > maxBytes) return tooLarge();
    return text;
#else
    error = "'" + path + "' is gzip-compressed and this shardscope was built without zlib: run "
            "`gunzip -k " + path + "` and open the .json.";
    return std::nullopt;
#endif
  }
  std::ifstream in(path, std::ios::binary);
  char buffer[1 << 16];
  while (text.size() < want && in) {  // in chunks: /dev/zero has no size to ask for
    in.read(buffer, static_cast<std::streamsize>(std::min(sizeof buffer, want - text.size())));
    text.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (prefix == std::string::npos && text.size() > maxBytes) return tooLarge();
  return text;
}

}  // namespace shardscope::files
