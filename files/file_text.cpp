#include "files/file_text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "files/readable_path.h"

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

#ifdef SHARDSCOPE_HAVE_ZLIB
// At its end, whether the file ended inside its compressed data: gzread returns what it could
// inflate of a truncated file, then 0, as at a whole file's end; only its error code tells them apart.
bool cutShort(gzFile in) {
  int code = Z_OK;
  gzerror(in, &code);
  return code == Z_BUF_ERROR;
}

// Where the file breaks, found by inflating it again (files/readable_path.h); zlib's own words
// where that finds nothing (a read error).
std::string damagedGzipMessage(const std::string& path, gzFile in) {
  if (auto where = gzipDamage(path); !where.empty()) return where;
  int code = 0;
  return "'" + path + "' is a damaged gzip file (" + gzerror(in, &code) +
         "): copy it again, or open the uncompressed .json.";
}
#endif

}  // namespace

// "1 GiB", "256 MiB", "1 MiB": the limits are whole powers of two.
std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " B";
}

std::string tooLargeMessage(const std::string& path, size_t maxBytes, const std::string& limitWhy = "") {
  return "'" + path + "' holds more than " + sizeText(maxBytes) +
         (startsWithGzipMagic(path) ? " once decompressed" : "") + ", " +
         (limitWhy.empty() ? "the most shardscope reads of such a file: is it the right file?" : limitWhy);
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
    error = tooLargeMessage(path, maxBytes);
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
      if (n < 0 || (n == 0 && cutShort(in))) {
        error = damagedGzipMessage(path, in);
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
    error = "'" + path +
            "' is gzip-compressed and this shardscope was built without zlib: run "
            "`gunzip -k " +
            path + "` and open the .json.";
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

// A plain file, or a gzip one when built with zlib.
struct FileTextStream::Source {
  std::ifstream plain;
#ifdef SHARDSCOPE_HAVE_ZLIB
  gzFile gz = nullptr;
  ~Source() {
    if (gz) gzclose(gz);
  }
#endif
};

FileTextStream::FileTextStream(const std::string& path, size_t maxBytes, std::string limitWhy)
    : source_(std::make_unique<Source>()), path_(path), maxBytes_(maxBytes), limitWhy_(std::move(limitWhy)) {
  setg(buffer_, buffer_, buffer_);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error_ = "'" + path + "' is a directory: name a file in it.";
  } else if (!std::ifstream(path)) {
    error_ = "cannot read '" + path + "': check that the file exists.";
  } else if (startsWithGzipMagic(path)) {
#ifdef SHARDSCOPE_HAVE_ZLIB
    source_->gz = gzopen(path.c_str(), "rb");
    if (!source_->gz) error_ = "cannot open '" + path + "' as gzip.";
#else
    error_ = "'" + path +
             "' is gzip-compressed and this shardscope was built without zlib: run "
             "`gunzip -k " +
             path + "` and open the .json.";
#endif
  } else {
    source_->plain.open(path, std::ios::binary);
  }
}

FileTextStream::~FileTextStream() = default;

FileTextStream::int_type FileTextStream::underflow() {
  if (!error_.empty()) return traits_type::eof();
  long n = 0;
#ifdef SHARDSCOPE_HAVE_ZLIB
  if (source_->gz) {
    n = gzread(source_->gz, buffer_, sizeof buffer_);
    if (n < 0 || (n == 0 && cutShort(source_->gz))) {
      error_ = damagedGzipMessage(path_, source_->gz);
      return traits_type::eof();
    }
  }
#endif
  if (source_->plain.is_open()) {
    source_->plain.read(buffer_, sizeof buffer_);
    n = static_cast<long>(source_->plain.gcount());
  }
  if (n <= 0) return traits_type::eof();
  read_ += static_cast<size_t>(n);
  if (read_ > maxBytes_) {
    error_ = tooLargeMessage(path_, maxBytes_, limitWhy_);
    return traits_type::eof();
  }
  setg(buffer_, buffer_, buffer_ + n);
  return traits_type::to_int_type(buffer_[0]);
}

std::string unreadableReason(const std::string& path, const std::string& error, size_t maxBytes,
                             const std::string& kind, const std::string& shrink) {
  std::error_code failed;
  if (!std::filesystem::exists(path, failed)) return "does not exist: check the path";
  if (std::filesystem::is_directory(path, failed))
    return "is a directory: open it as a job's directory, or name a file in it";
  const auto size = std::filesystem::file_size(path, failed);
  if (!failed && size > maxBytes) {
    return "is " + std::to_string(size >> 20) + " MiB; shardscope reads " + kind + " up to " +
           std::to_string(maxBytes >> 20) + " MiB: " + shrink;
  }
  return "cannot be read: " + error;
}

}  // namespace shardscope::files
