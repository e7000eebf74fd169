// Protocol Buffers' wire format, the few pieces shardscope writes and reads (Perfetto's trace,
// perfetto_trace.h): varints, 64-bit doubles, length-delimited bytes and nested messages. No
// generated code and no schema file: the field numbers live where each message is written.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope::trace::proto {

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// Appends fields to a string. A nested message is built in a scratch buffer of its depth (reused:
// no allocation per message once warm) and copied in behind its length.
class Writer {
 public:
  explicit Writer(std::string& out, int depth = 0) : out_(out), depth_(depth) {}

  void varint(uint32_t field, uint64_t value) {
    key(field, kVarint);
    raw(value);
  }
  void number(uint32_t field, int64_t value) {
    varint(field, static_cast<uint64_t>(value));
  }  // int64's two's complement
  void float64(uint32_t field, double value) {
    key(field, kFixed64);
    char bytes[8];
    std::memcpy(bytes, &value, 8);  // little-endian hosts only, as every one shardscope runs on
    out_.append(bytes, 8);
  }
  void bytes(uint32_t field, std::string_view value) {
    key(field, kBytes);
    raw(value.size());
    out_.append(value.data(), value.size());
  }
  template <class Fill>
  void message(uint32_t field, Fill&& fill) {
    std::string& inner = scratch(depth_);
    inner.clear();
    Writer child(inner, depth_ + 1);
    fill(child);
    bytes(field, inner);
  }

 private:
  static constexpr int kMaxDepth = 8;
  static std::string& scratch(int depth) {
    static thread_local std::string buffers[kMaxDepth];
    return buffers[depth];
  }
  void key(uint32_t field, WireType type) { raw((static_cast<uint64_t>(field) << 3) | type); }
  void raw(uint64_t value) {
    char bytes[10];
    int n = 0;
    do {
      bytes[n] = static_cast<char>((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
      value >>= 7;
      ++n;
    } while (value != 0);
    out_.append(bytes, static_cast<size_t>(n));
  }

  std::string& out_;
  int depth_;
};

// One field as read: its number, wire type, and value (a varint's or fixed's bits, or bytes).
struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t bits = 0;       // varint, fixed64, fixed32
  std::string_view bytes;  // length-delimited

  double asDouble() const {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  int64_t asInt() const { return static_cast<int64_t>(bits); }
};

// Walks the fields of one message. next() is false at its end, or on a malformed field (then
// failed() is true): a truncated or damaged file is told apart from one that ends cleanly.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool next(Field& field) {
    if (at_ >= data_.size()) return false;
    uint64_t key = 0;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX) return fail();
    field.number = static_cast<uint32_t>(key >> 3);
    field.type = static_cast<WireType>(key & 7);
    switch (field.type) {
      case kVarint:
        return varint(field.bits) || fail();
      case kFixed64:
        return fixed(field.bits, 8) || fail();
      case kFixed32:
        return fixed(field.bits, 4) || fail();
      case kBytes: {
        uint64_t size = 0;
        if (!varint(size) || size > data_.size() - at_) return fail();
        field.bytes = data_.substr(at_, size);
        at_ += size;
        return true;
      }
      default:
        return fail();
    }
  }
  bool failed() const { return failed_; }
  size_t offset() const { return at_; }

 private:
  bool fail() {
    failed_ = true;
    at_ = data_.size();
    return false;
  }
  bool varint(uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && at_ < data_.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(data_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool fixed(uint64_t& value, size_t size) {
    if (data_.size() - at_ < size) return false;
    value = 0;
    std::memcpy(&value, data_.data() + at_, size);
    at_ += size;
    return true;
  }

  std::string_view data_;
  size_t at_ = 0;
  bool failed_ = false;
};

}  // namespace shardscope::trace::proto
