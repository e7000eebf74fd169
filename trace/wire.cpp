#include "trace/wire.h"

#include <nlohmann/json.hpp>

namespace shardscope::trace {

namespace {
std::optional<EventKind> kindFromName(const std::string& name) {
  for (auto kind : {EventKind::StepEnd, EventKind::RunInfo, EventKind::RankError, EventKind::RunDone}) {
    if (name == eventKindName(kind)) return kind;
  }
  return std::nullopt;
}
}  // namespace

std::string encodeEventLine(const Event& event) {
  nlohmann::json j = {{"kind", eventKindName(event.kind)},
                      {"rank", event.rank},
                      {"step", event.step},
                      {"begin_ns", event.beginNs},
                      {"end_ns", event.endNs},
                      {"loss", event.loss},
                      {"count", event.count},
                      {"world_size", event.worldSize},
                      {"text", event.text}};
  return j.dump() + "\n";
}

std::optional<Event> decodeEventLine(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return std::nullopt;
  auto kind = kindFromName(j["kind"].get<std::string>());
  if (!kind) return std::nullopt;
  try {
    Event e;
    e.kind = *kind;
    e.rank = j.value("rank", 0);
    e.step = j.value("step", -1);
    e.beginNs = j.value("begin_ns", int64_t{0});
    e.endNs = j.value("end_ns", int64_t{0});
    e.loss = j.value("loss", 0.0);
    e.count = j.value("count", int64_t{0});
    e.worldSize = j.value("world_size", 0);
    e.text = j.value("text", std::string());
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace shardscope::trace
