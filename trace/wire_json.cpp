#include "trace/wire.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace shardscope::trace {

// Events as JSON lines, the wire of shardscope before binary frames: still read in older streams
// and rank-R.events files. A hand-written codec for this one flat shape (short keys, integers, one
// float, one string); any line the fast decoder does not recognise goes through nlohmann::json.

namespace {

void appendKey(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

void appendInt(std::string& out, const char* key, int64_t value) {
  appendKey(out, key);
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
  out += ',';
}

// A double exactly (17 significant digits read back to the same bits). Not std::to_chars: the
// browser build's libc++ (emscripten 3.1.6) has it for integers only.
void appendDouble(std::string& out, const char* key, double value) {
  appendKey(out, key);
  char buf[32];
  out.append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%.17g", value)));
  out += ',';
}

// A double from [p, end): where it ends, or nullptr. strtod needs a terminated string; a number
// past 31 characters is none we write.
const char* parseDouble(const char* p, const char* end, double& value) {
  char buf[32];
  const size_t n = std::min<size_t>(static_cast<size_t>(end - p), sizeof buf - 1);
  std::memcpy(buf, p, n);
  buf[n] = '\0';
  char* stop = nullptr;
  value = std::strtod(buf, &stop);
  return stop == buf ? nullptr : p + (stop - buf);
}

void appendString(std::string& out, const char* key, const std::string& value) {
  out += '"';
  out += key;
  out += "\":";
  out += nlohmann::json(value).dump();  // escaping; strings are short and rare
  out += ',';
}

}  // namespace

std::string encodeEventLine(const Event& e) {
  std::string out;
  out.reserve(96);
  out += "{\"k\":\"";
  out += eventKindName(e.kind);
  out += "\",";
  appendInt(out, "r", e.rank);
  appendInt(out, "s", e.step);
  appendInt(out, "b", e.beginNs);
  appendInt(out, "e", e.endNs);
  switch (e.kind) {
    case EventKind::Memory:
      appendInt(out, "by", e.bytes);
      appendInt(out, "ro", e.role);
      if (e.fromRole != kNoRole) appendInt(out, "fr", e.fromRole);
      if (e.unit != kNoUnit) appendInt(out, "u", e.unit);
      if (e.space != 0) appendInt(out, "sp", e.space);
      break;
    case EventKind::Collective:
    case EventKind::CollectiveIssued:
    case EventKind::CollectiveFailed:
      appendInt(out, "i", e.issueNs);
      appendInt(out, "by", e.bytes);
      appendInt(out, "bo", e.bytesOut);
      appendInt(out, "w", e.worldSize);
      appendInt(out, "ph", e.phase);
      appendInt(out, "op", e.op);
      if (e.microBatch != 0) appendInt(out, "mb", e.microBatch);
      if (e.processGroup != 0) appendInt(out, "pg", e.processGroup);
      // An issued one's number in its group; an all-to-all's own part, a send's or recv's peer (or -1).
      if (e.kind == EventKind::CollectiveIssued || e.op == static_cast<uint8_t>(CollectiveOp::AllToAll) ||
          isPointToPoint(static_cast<CollectiveOp>(e.op))) {
        appendInt(out, "c", legacyCountOf(e));
      }
      appendString(out, "t", e.text);
      break;
    case EventKind::Compute:
    case EventKind::Group:  // op is the GroupKind, text the group's label
      if (e.microBatch != 0) appendInt(out, "mb", e.microBatch);
      appendInt(out, "ph", e.phase);
      appendInt(out, "op", e.op);
      appendString(out, "t", e.text);
      break;
    default:
      // RunInfo: the GPU's memory (bytes) and the matmul peak it measured (bytesOut), both 0 on CPU.
      if (e.kind == EventKind::RunInfo) {
        appendInt(out, "by", e.deviceMemoryBytes);
        appendInt(out, "bo", e.peakFlopsPerSecond);
      }
      if (e.pausedNs != 0) appendInt(out, "pz", e.pausedNs);
      appendDouble(out, "l", e.loss);
      appendInt(out, "c", legacyCountOf(e));
      appendInt(out, "w", e.worldSize);
      appendString(out, "t", e.text);
  }
  out.back() = '}';
  out += '\n';
  return out;
}

namespace {

// `legacyCount`: the "c" of the line, placed by its kind once the whole line is read.
bool assign(Event& e, std::string_view key, int64_t v, int64_t& legacyCount) {
  if (key == "r")
    e.rank = static_cast<int32_t>(v);
  else if (key == "s")
    e.step = static_cast<int32_t>(v);
  else if (key == "mb")
    e.microBatch = static_cast<int32_t>(v);
  else if (key == "b")
    e.beginNs = v;
  else if (key == "e")
    e.endNs = v;
  else if (key == "i")
    e.issueNs = v;
  else if (key == "by")
    e.bytes = v;
  else if (key == "bo")
    e.bytesOut = v;
  else if (key == "c")
    legacyCount = v;
  else if (key == "w")
    e.worldSize = static_cast<int32_t>(v);
  else if (key == "ro")
    e.role = static_cast<uint8_t>(v);
  else if (key == "fr")
    e.fromRole = static_cast<uint8_t>(v);
  else if (key == "ph")
    e.phase = static_cast<uint8_t>(v);
  else if (key == "op")
    e.op = static_cast<uint8_t>(v);
  else if (key == "u")
    e.unit = static_cast<int32_t>(v);
  else if (key == "pz")
    e.pausedNs = v;
  else if (key == "pg")
    e.processGroup = static_cast<uint8_t>(v);
  else if (key == "sp")
    e.space = static_cast<uint8_t>(v);
  else
    return false;
  return true;
}

// Fast path: exactly the shape encodeEventLine writes, strings without escapes.
std::optional<Event> decodeFast(std::string_view line, bool& understood, int64_t& legacyCount) {
  understood = false;
  const char* p = line.data();
  const char* end = p + line.size();
  if (p == end || *p++ != '{') return std::nullopt;
  Event e;
  bool haveKind = false;
  while (p < end) {
    if (*p++ != '"') return std::nullopt;
    const char* keyEnd = static_cast<const char*>(std::memchr(p, '"', end - p));
    if (!keyEnd || keyEnd + 1 >= end || keyEnd[1] != ':') return std::nullopt;
    std::string_view key(p, keyEnd - p);
    p = keyEnd + 2;
    if (p < end && *p == '"') {
      const char* strEnd = static_cast<const char*>(std::memchr(p + 1, '"', end - p - 1));
      if (!strEnd || std::memchr(p + 1, '\\', strEnd - p - 1)) return std::nullopt;  // escapes
      std::string_view value(p + 1, strEnd - p - 1);
      if (key == "k") {
        auto kind = eventKindFromName(std::string(value));
        if (!kind) return std::nullopt;
        e.kind = *kind;
        haveKind = true;
      } else if (key == "t") {
        e.text.assign(value);
      } else {
        return std::nullopt;
      }
      p = strEnd + 1;
    } else if (key == "l") {
      double v = 0;
      const char* next = parseDouble(p, end, v);
      if (!next) return std::nullopt;
      e.loss = v;
      p = next;
    } else {
      int64_t v = 0;
      auto [next, ec] = std::from_chars(p, end, v);
      if (ec != std::errc() || !assign(e, key, v, legacyCount)) return std::nullopt;
      p = next;
    }
    if (p < end && *p == ',') {
      ++p;
    } else if (p < end && *p == '}' && p + 1 == end) {
      understood = true;
      if (!haveKind || !namesKnownValues(e)) return std::nullopt;
      return e;
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<Event> decodeGeneral(std::string_view line, int64_t& legacyCount) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("k") || !j["k"].is_string()) return std::nullopt;
  auto kind = eventKindFromName(j["k"].get<std::string>());
  if (!kind) return std::nullopt;
  try {
    Event e;
    e.kind = *kind;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "k") continue;
      if (it.key() == "t")
        e.text = it.value().get<std::string>();
      else if (it.key() == "l")
        e.loss = it.value().get<double>();
      else if (!assign(e, it.key(), it.value().get<int64_t>(), legacyCount))
        return std::nullopt;
    }
    if (!namesKnownValues(e)) return std::nullopt;
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<Event> decodeEventLine(std::string_view line) {
  bool understood = false;
  int64_t legacyCount = 0;
  auto event = decodeFast(line, understood, legacyCount);
  if (!understood) {
    legacyCount = 0;  // the fast reader's, of a line it gave up on
    event = decodeGeneral(line, legacyCount);
  }
  if (event) placeLegacyFigures(*event, legacyCount);
  return event;
}

}  // namespace shardscope::trace
