#include "trace/wire.h"

#include <nlohmann/json.hpp>

namespace shardscope::trace {

// Short keys: a rank may stream hundreds of thousands of events.
std::string encodeEventLine(const Event& e) {
  nlohmann::json j = {{"k", eventKindName(e.kind)}, {"r", e.rank}, {"s", e.step},
                      {"b", e.beginNs},             {"e", e.endNs}};
  switch (e.kind) {
    case EventKind::Memory:
      j["by"] = e.bytes;
      j["ro"] = e.role;
      if (e.fromRole != kNoRole) j["fr"] = e.fromRole;
      break;
    case EventKind::Collective:
      j["i"] = e.issueNs;
      j["by"] = e.bytes;
      j["bo"] = e.bytesOut;
      j["w"] = e.worldSize;
      j["ph"] = e.phase;
      j["op"] = e.op;
      j["t"] = e.text;
      break;
    case EventKind::Compute:
      j["ph"] = e.phase;
      j["op"] = e.op;
      j["t"] = e.text;
      break;
    default:
      j["l"] = e.loss;
      j["c"] = e.count;
      j["w"] = e.worldSize;
      j["t"] = e.text;
  }
  return j.dump() + "\n";
}

std::optional<Event> decodeEventLine(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("k") || !j["k"].is_string()) return std::nullopt;
  auto kind = eventKindFromName(j["k"].get<std::string>());
  if (!kind) return std::nullopt;
  try {
    Event e;
    e.kind = *kind;
    e.rank = j.value("r", 0);
    e.step = j.value("s", -1);
    e.beginNs = j.value("b", int64_t{0});
    e.endNs = j.value("e", int64_t{0});
    e.issueNs = j.value("i", int64_t{0});
    e.bytes = j.value("by", int64_t{0});
    e.bytesOut = j.value("bo", int64_t{0});
    e.count = j.value("c", int64_t{0});
    e.loss = j.value("l", 0.0);
    e.worldSize = j.value("w", 0);
    e.role = j.value("ro", uint8_t{0});
    e.fromRole = j.value("fr", kNoRole);
    e.phase = j.value("ph", uint8_t{0});
    e.op = j.value("op", uint8_t{0});
    e.text = j.value("t", std::string());
    if (e.kind == EventKind::Memory && e.role >= kMemoryRoleCount) return std::nullopt;
    if (e.kind == EventKind::Collective && e.op >= kCollectiveOpCount) return std::nullopt;
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace shardscope::trace
