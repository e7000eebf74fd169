#include "files/chrome_trace_stream.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <simdjson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "files/file_text.h"
#include "files/user_json.h"

namespace shardscope::files {

namespace {

constexpr size_t kChunkBytes = size_t{4} << 20;
constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kNone = static_cast<size_t>(-1);

// The file's bytes, a chunk at a time, with simdjson's padding always allocated past the last one
// read. Positions are into the buffer; reading more drops what lies before the value in hand.
class Chunks {
 public:
  explicit Chunks(files::FileTextStream& in) : in_(in), bytes_(kChunkBytes + kPadding) {}

  const char* data() const { return bytes_.data(); }
  size_t end() const { return end_; }
  // What simdjson may read from `at` on: the bytes read and the padding after them.
  size_t capacityFrom(size_t at) const { return bytes_.size() - at; }
  size_t fileOffset(size_t at) const { return dropped_ + at; }

  // Drops the bytes before `keep` (which becomes 0) and reads another chunk after the rest; false
  // when the file has no more. A value larger than a chunk grows the buffer to hold it.
  bool readMore(size_t& keep) {
    std::memmove(bytes_.data(), bytes_.data() + keep, end_ - keep);
    end_ -= keep;
    dropped_ += keep;
    keep = 0;
    if (bytes_.size() - end_ < kChunkBytes / 2 + kPadding) bytes_.resize(end_ + kChunkBytes + kPadding);
    const auto n = in_.sgetn(bytes_.data() + end_, static_cast<std::streamsize>(bytes_.size() - end_ - kPadding));
    end_ += static_cast<size_t>(std::max<std::streamsize>(n, 0));
    std::memset(bytes_.data() + end_, ' ', bytes_.size() - end_);
    return n > 0;
  }

 private:
  files::FileTextStream& in_;
  std::vector<char> bytes_;
  size_t end_ = 0;
  size_t dropped_ = 0;  // bytes of the file before bytes_[0]
};

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first byte at or after `i` (before `end`) that is one of `wanted`, or `end`: sixteen bytes
// at a time with SSE2 (every x86-64), else eight as one word. Reads up to 15 bytes past `end`: the
// chunk's padding (Chunks keeps simdjson's, 64 bytes, after its end).
template <size_t N>
size_t firstOf(const char* p, size_t i, size_t end, const char (&wanted)[N]) {
#if defined(__SSE2__)
  for (; i < end; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i hits = _mm_setzero_si128();
    for (size_t k = 0; k + 1 < N; ++k) hits = _mm_or_si128(hits, _mm_cmpeq_epi8(bytes, _mm_set1_epi8(wanted[k])));
    if (const int mask = _mm_movemask_epi8(hits)) return std::min(end, i + static_cast<size_t>(__builtin_ctz(mask)));
  }
#else
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  for (; i < end; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, sizeof word);
    uint64_t hits = 0;  // the lowest marked byte is exact; borrows may mark others above it
    for (size_t k = 0; k + 1 < N; ++k) {
      const uint64_t x = word ^ (kOnes * static_cast<unsigned char>(wanted[k]));
      hits |= (x - kOnes) & ~x & kHighs;
    }
    if (hits) return std::min(end, i + (static_cast<size_t>(__builtin_ctzll(hits)) >> 3));
  }
#endif
  return end;
}

// Past the string that opens at `from` (its quote), or kNone if the buffer ends first.
size_t stringEnd(const char* p, size_t from, size_t end) {
  for (size_t i = from + 1;;) {
    const size_t at = firstOf(p, i, end, "\"\\");
    if (at >= end) return kNone;
    if (p[at] == '"') return at + 1;
    i = at + 2;  // past the escape and the byte it escapes
  }
}

// Of the 64 bytes from `p`, those that are one of `wanted`: bit k for byte k. SSE2 (every x86-64)
// sixteen bytes at a time, else byte by byte. Reads 64 bytes: the chunk's padding holds them.
template <size_t N>
uint64_t bytesOf(const char* p, const char (&wanted)[N]) {
  uint64_t bits = 0;
#if defined(__SSE2__)
  for (int part = 0; part < 4; ++part) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * part));
    __m128i hits = _mm_setzero_si128();
    for (size_t k = 0; k + 1 < N; ++k) hits = _mm_or_si128(hits, _mm_cmpeq_epi8(bytes, _mm_set1_epi8(wanted[k])));
    bits |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(hits))) << (16 * part);
  }
#else  // eight bytes as one word (the browser's build): a byte's high bit set where it is wanted, exactly
  constexpr uint64_t kLows = 0x7F7F7F7F7F7F7F7FULL, kOnes = 0x0101010101010101ULL;
  for (int part = 0; part < 8; ++part) {
    uint64_t word = 0;
    std::memcpy(&word, p + 8 * part, sizeof word);
    uint64_t hits = 0;
    for (size_t k = 0; k + 1 < N; ++k) {
      const uint64_t x = word ^ (kOnes * static_cast<unsigned char>(wanted[k]));
      hits |= ~(((x & kLows) + kLows) | x | kLows);  // 0x80 in each byte of x that is zero
    }
    // The eight high bits gathered into one byte, byte i's as bit i.
    bits |= (((hits >> 7) * 0x0102040810204080ULL) >> 56) << (8 * part);
  }
#endif
  return bits;
}

// Past the JSON value that begins at `from`, or kNone if the buffer ends first. Only brackets and
// strings are followed: what lies between is for simdjson or nlohmann to check. An object or
// array is walked 64 bytes at a time, by the bits of its quotes, escapes and brackets.
size_t valueEnd(const char* p, size_t from, size_t end) {
  if (from >= end) return kNone;
  if (p[from] == '"') return stringEnd(p, from, end);
  if (p[from] != '{' && p[from] != '[') {
    size_t i = from + 1;  // at least its first byte: a stray '}' is one too, not an empty value
    while (i < end && p[i] != ',' && p[i] != '}' && p[i] != ']' && !isSpace(p[i])) ++i;
    return i < end ? i : kNone;
  }
  int depth = 0;
  bool inString = false;
  size_t escaped = kNone;  // the byte an escape in a string makes plain
  for (size_t block = from; block < end; block += 64) {
    for (uint64_t bits = bytesOf(p + block, "\"\\{}[]"); bits != 0; bits &= bits - 1) {
      const size_t at = block + static_cast<size_t>(__builtin_ctzll(bits));
      if (at >= end) return kNone;
      const char c = p[at];
      if (inString) {
        if (at == escaped) continue;
        if (c == '\\') escaped = at + 1;
        inString = c != '"';
        continue;
      }
      if (c == '"') {
        inString = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return at + 1;
      }
    }
  }
  return kNone;
}

// What an On Demand value is, for a message (as files::jsonKindName says a parsed one).
std::string jsonTypeName(simdjson::ondemand::json_type type) {
  switch (type) {
    case simdjson::ondemand::json_type::number:
      return "a number";
    case simdjson::ondemand::json_type::string:
      return "a string";
    case simdjson::ondemand::json_type::object:
      return "an object";
    case simdjson::ondemand::json_type::array:
      return "an array";
    case simdjson::ondemand::json_type::boolean:
      return "true or false";
    case simdjson::ondemand::json_type::null:
      return "null";
  }
  return "a value";
}

// A pid or tid: a number, or a name given a stable number.
int64_t idOf(simdjson::ondemand::value value) {
  if (std::string_view name; value.get_string().get(name) == simdjson::SUCCESS)
    return static_cast<int64_t>(std::hash<std::string_view>{}(name) >> 1);
  int64_t id = 0;
  return value.get_int64().get(id) == simdjson::SUCCESS ? id : 0;
}

// The fields an event's reader takes, by their keys.
enum class EventField : uint8_t { Other, Name, Ph, Cat, Ts, Dur, Pid, Tid, Args };

// Which field a key names, compared as the file writes it (none of these keys holds an escape):
// by its first byte, then whole.
EventField fieldOf(simdjson::ondemand::raw_json_string key) {
  const char* raw = key.raw();
  switch (raw[0]) {
    case 'n':
      return key.unsafe_is_equal("name") ? EventField::Name : EventField::Other;
    case 'p':
      return key.unsafe_is_equal("ph")    ? EventField::Ph
             : key.unsafe_is_equal("pid") ? EventField::Pid
                                          : EventField::Other;
    case 'c':
      return key.unsafe_is_equal("cat") ? EventField::Cat : EventField::Other;
    case 't':
      return key.unsafe_is_equal("ts")    ? EventField::Ts
             : key.unsafe_is_equal("tid") ? EventField::Tid
                                          : EventField::Other;
    case 'd':
      return key.unsafe_is_equal("dur") ? EventField::Dur : EventField::Other;
    case 'a':
      return key.unsafe_is_equal("args") ? EventField::Args : EventField::Other;
    default:
      return EventField::Other;
  }
}

// One pass over the event's fields (Kineto writes ph, cat, name, pid, tid, ts, dur, args; any
// order reads the same).
ChromeEvent fieldsOf(simdjson::ondemand::object& event) {
  ChromeEvent f;
  for (auto field : event) {
    // Converted as exceptions: a damaged event (a key without its colon) throws, and is named.
    const simdjson::ondemand::raw_json_string key = field.key();
    simdjson::ondemand::value value = field.value();
    switch (fieldOf(key)) {
      case EventField::Name:
        f.hasName = value.get_string().get(f.name) == simdjson::SUCCESS;
        break;
      case EventField::Ph:
        if (value.get_string().get(f.ph) != simdjson::SUCCESS) f.ph = {};
        break;
      case EventField::Cat:
        if (value.get_string().get(f.cat) != simdjson::SUCCESS) f.cat = {};
        break;
      case EventField::Ts:
        f.hasTs = value.get_double().get(f.ts) == simdjson::SUCCESS;
        break;
      case EventField::Dur:
        f.hasDur = value.get_double().get(f.dur) == simdjson::SUCCESS;
        break;
      case EventField::Pid:
        f.pid = idOf(value);
        break;
      case EventField::Tid:
        f.tid = idOf(value);
        break;
      case EventField::Args: {
        simdjson::ondemand::object args;
        if (value.get_object().get(args) != simdjson::SUCCESS || args.raw_json().get(f.args) != simdjson::SUCCESS)
          f.args = {};
        break;
      }
      case EventField::Other:
        break;
    }
  }
  return f;
}

// A number as an integer, whichever way it is written (an integer, a large unsigned one, or with a
// fraction); false for anything else.
bool integerOf(simdjson::ondemand::value value, int64_t& out) {
  if (value.get_int64().get(out) == simdjson::SUCCESS) return true;
  double d = 0;
  if (value.get_double().get(d) != simdjson::SUCCESS) return false;
  out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d);
  return true;
}

class TraceScanner {
 public:
  TraceScanner(files::FileTextStream& in, const ChromeTraceHandlers& handlers) : chunks_(in), handlers_(handlers) {}

  std::string read();
  TraceProblemKind kind() const { return kind_; }

 private:
  // The next byte that is not whitespace (pos_ on it), or -1 at the file's end.
  int next() {
    for (;;) {
      while (pos_ < chunks_.end() && isSpace(chunks_.data()[pos_])) ++pos_;
      if (pos_ < chunks_.end()) return static_cast<unsigned char>(chunks_.data()[pos_]);
      if (!chunks_.readMore(pos_)) return -1;
    }
  }
  // Past the value at pos_, reading on while the buffer ends inside it; kNone at the file's end.
  size_t wholeValue() {
    for (;;) {
      const size_t end = valueEnd(chunks_.data(), pos_, chunks_.end());
      if (end != kNone) return end;
      if (!chunks_.readMore(pos_)) return kNone;
    }
  }
  std::string fail(TraceProblemKind kind, std::string why) {
    kind_ = kind;
    return why;
  }
  std::string notJson(const std::string& what) {
    return fail(TraceProblemKind::NotJson,
                "is not JSON at byte " + std::to_string(chunks_.fileOffset(pos_)) + " (" + what + ")");
  }
  std::string truncated() { return fail(TraceProblemKind::Truncated, "ends before its JSON does (a truncated file)"); }
  std::string member(const std::string& key);
  std::string events();
  std::string event(size_t end);

  Chunks chunks_;
  const ChromeTraceHandlers& handlers_;
  size_t pos_ = 0;
  size_t index_ = 0;
  bool sawEvents_ = false;
  TraceProblemKind kind_ = TraceProblemKind::None;
  simdjson::ondemand::parser parser_;
};

std::string TraceScanner::read() {
  if (next() != '{')
    return next() == -1 ? fail(TraceProblemKind::Empty, "is empty") : notJson("a trace is one JSON object");
  ++pos_;
  for (int c = next(); c != '}'; c = next()) {
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c != '"') return c == -1 ? truncated() : notJson("a key was expected");
    const size_t end = wholeValue();
    if (end == kNone) return truncated();
    const auto key = nlohmann::json::parse(chunks_.data() + pos_, chunks_.data() + end, nullptr, false);
    if (!key.is_string()) return notJson("a damaged key");
    pos_ = end;
    if (next() != ':') return notJson("':' was expected after a key");
    ++pos_;
    if (auto problem = member(key.get<std::string>()); !problem.empty()) return problem;
  }
  return sawEvents_ ? "" : fail(TraceProblemKind::NoTraceEvents, "has no traceEvents array");
}

std::string TraceScanner::member(const std::string& key) {
  if (key == "traceEvents" && next() == '[') return events();
  if (next() == -1) return truncated();
  const size_t end = wholeValue();
  if (end == kNone) return truncated();
  const auto value = files::parseUserJson(std::string(chunks_.data() + pos_, end - pos_)).value;
  if (value.is_discarded()) return notJson("the value of \"" + files::clipped(key) + "\"");
  pos_ = end;
  if (handlers_.onMember) handlers_.onMember(key, value);
  return "";
}

std::string TraceScanner::events() {
  sawEvents_ = true;
  ++pos_;  // the '['
  for (int c = next();; c = next()) {
    if (c == ']') {
      ++pos_;
      return "";
    }
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c == -1) return truncated();
    if (c == '}') return notJson("a '}' where an event belongs");
    const size_t end = wholeValue();
    if (end == kNone) return truncated();
    ++index_;
    if (c == '{') {
      if (auto problem = event(end); !problem.empty()) return problem;
    } else if (handlers_.onOtherElement) {
      std::string refused = handlers_.onOtherElement(std::string_view(chunks_.data() + pos_, end - pos_), index_);
      if (!refused.empty()) return fail(TraceProblemKind::Refused, std::move(refused));
    }
    pos_ = end;
  }
}

std::string TraceScanner::event(size_t end) {
  try {
    auto document = parser_.iterate(chunks_.data() + pos_, end - pos_, chunks_.capacityFrom(pos_));
    simdjson::ondemand::object object = document.get_object();
    ChromeEvent fields = fieldsOf(object);
    fields.text = std::string_view(chunks_.data() + pos_, end - pos_);
    std::string refused = handlers_.onEvent ? handlers_.onEvent(fields, index_) : "";
    return refused.empty() ? refused : fail(TraceProblemKind::Refused, std::move(refused));
  } catch (const simdjson::simdjson_error& error) {
    return notJson("in its event " + std::to_string(index_) + ": " + error.what());
  }
}

}  // namespace

TraceProblem streamChromeTrace(const std::string& path, const ChromeTraceHandlers& handlers, size_t maxBytes,
                               const std::string& why) {
  files::FileTextStream in(path, maxBytes, why);
  if (!in.error().empty()) {
    return {TraceProblemKind::Unreadable, files::unreadableReason(path, in.error(), maxBytes, "traces", "")};
  }
  TraceScanner scanner(in, handlers);
  std::string problem = scanner.read();
  if (in.error().empty()) return problem.empty() ? TraceProblem{} : TraceProblem{scanner.kind(), problem};
  // A damaged gzip stream reads as an early end: say what it was (its message names the file first).
  const std::string named = "'" + path + "' ";
  const std::string& damaged = in.error();
  return {TraceProblemKind::Unreadable, damaged.rfind(named, 0) == 0 ? damaged.substr(named.size()) : damaged};
}

struct ChromeArgs::Parser {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document document;
  std::string padded;
};

ChromeArgs::ChromeArgs() : parser_(std::make_unique<Parser>()) {}
ChromeArgs::~ChromeArgs() = default;

std::string ChromeArgs::integers(std::string_view args, const std::vector<std::string_view>& keys,
                                 std::vector<int64_t>& values, std::vector<bool>& found) {
  values.assign(keys.size(), 0);
  found.assign(keys.size(), false);
  parser_->padded.assign(args.data(), args.size());
  parser_->padded.append(kPadding, ' ');
  try {
    parser_->document = parser_->parser.iterate(parser_->padded.data(), args.size(), parser_->padded.size());
    for (auto field : parser_->document.get_object()) {
      const std::string_view key = field.unescaped_key();
      const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
      if (i == keys.size()) continue;
      simdjson::ondemand::value value = field.value();
      if (!integerOf(value, values[i]))
        return "\"args." + std::string(key) + "\" is " + jsonTypeName(value.type()) + " where a number belongs";
      found[i] = true;
    }
  } catch (const simdjson::simdjson_error& error) {
    return std::string("its args are not JSON (") + error.what() + ")";
  }
  return "";
}

}  // namespace shardscope::files
