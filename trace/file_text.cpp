#include "trace/file_text.h"

#include <algorithm>
#include <fstream>

#ifdef SHARDSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace shardscope::trace {

namespace {

bool startsWithGzipMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

std::optional<std::string> readFileText(const std::string& path, std::string& error, size_t limit) {
  if (!std::ifstream(path)) {
    error = "cannot read '" + path + "': check that the file exists.";
    return std::nullopt;
  }
  std::string text;
  if (startsWithGzipMagic(path)) {
#ifdef SHARDSCOPE_HAVE_ZLIB
    gzFile in = gzopen(path.c_str(), "rb");
    if (!in) {
      error = "cannot open '" + path + "' as gzip.";
      return std::nullopt;
    }
    char buffer[1 << 16];
    while (text.size() < limit) {
      const int n = gzread(in, buffer, static_cast<unsigned>(std::min(sizeof buffer, limit - text.size())));
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
    return text;
#else
    error = "'" + path + "' is gzip-compressed and this shardscope was built without zlib: run "
            "`gunzip -k " + path + "` and open the .json.";
    return std::nullopt;
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (limit == std::string::npos) {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    text.resize(limit);
    in.read(text.data(), static_cast<std::streamsize>(limit));
    text.resize(static_cast<size_t>(in.gcount()));
  }
  return text;
}

}  // namespace shardscope::trace
