#include "trace/collector_hello.h"

#include <nlohmann/json.hpp>

#include "trace/events.h"

namespace shardscope::trace {

namespace {

// 2: events as binary frames (trace/wire.h); 1: as JSON lines, still read.
constexpr const char* kProtocol = "shardscope.collector/2";
constexpr const char* kLinesProtocol = "shardscope.collector/1";

}  // namespace

std::string encodeCollectorHello(const CollectorHello& hello) {
  nlohmann::json j = {{"hello", kProtocol}, {"rank", hello.rank}, {"world", hello.world}, {"token", hello.token}};
  if (!hello.configJson.empty()) j["config"] = nlohmann::json::parse(hello.configJson, nullptr, false);
  return j.dump() + "\n";
}

std::optional<CollectorHello> decodeCollectorHello(std::string_view line, std::string& why) {
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  // Every field's type is checked before it is read: a stranger's {"hello": 1} is refused, not thrown.
  if (!j.is_object() || !j.contains("hello") || !j["hello"].is_string()) {
    why = "its first line is not a shardscope rank's hello";
    return std::nullopt;
  }
  const std::string protocol = j["hello"].get<std::string>();
  if (protocol != kProtocol && protocol != kLinesProtocol) {
    why = protocol.rfind("shardscope.collector/", 0) == 0 ? "it speaks " + protocol + ", this collector " + kProtocol +
                                                                " (or 1): run one shardscope version "
                                                                "on the ranks and the collector"
                                                          : "its first line is not a shardscope rank's hello";
    return std::nullopt;
  }
  CollectorHello hello;
  const auto& rank = j.contains("rank") ? j["rank"] : nlohmann::json();
  const auto& world = j.contains("world") ? j["world"] : nlohmann::json();
  if (!rank.is_number_integer() || !world.is_number_integer() || world.get<int64_t>() < 1 ||
      world.get<int64_t>() > kMaxRanks || rank.get<int64_t>() < 0 || rank.get<int64_t>() >= world.get<int64_t>()) {
    why = "its hello names no rank below a world of 1 to 1024";
    return std::nullopt;
  }
  hello.rank = rank.get<int>();
  hello.world = world.get<int>();
  if (j.contains("token") && j["token"].is_string()) hello.token = j["token"].get<std::string>();
  if (j.contains("config") && j["config"].is_object()) hello.configJson = j["config"].dump(2);
  return hello;
}

}  // namespace shardscope::trace
