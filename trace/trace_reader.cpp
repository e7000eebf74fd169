#include "trace/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "files/user_json.h"

namespace shardscope::trace {

namespace {

// +1 keeps the first event off 0, which RunRecording reads as "no timestamp".
int64_t nanos(double micros) { return static_cast<int64_t>(micros * 1e3 + 0.5) + 1; }

std::optional<uint8_t> indexOf(const std::string& name, const char* (*nameOf)(int), int count) {
  for (int i = 0; i < count; ++i) {
    if (name == nameOf(i)) return static_cast<uint8_t>(i);
  }
  return std::nullopt;
}

const char* roleName(int i) { return memoryRoleName(static_cast<MemoryRole>(i)); }
const char* opName(int i) { return collectiveOpName(static_cast<CollectiveOp>(i)); }
const char* processGroupOf(int i) { return processGroupName(static_cast<ProcessGroup>(i)); }
const char* computeName(int i) { return computeKindName(static_cast<ComputeKind>(i)); }
const char* phaseNameOf(int i) { return phaseName(static_cast<Phase>(i)); }
const char* groupName(int i) { return groupKindName(static_cast<GroupKind>(i)); }

constexpr const char* kUnitMemoryPrefix = "unit memory ";
// More ranks than any trace shardscope writes or reads (a rank is a pid; 1024 GPUs at the most).
constexpr int64_t kMaxTraceRanks = 1024;

// An event group (instant) or a pause at the step gate before one (slice).
Event groupEvent(const nlohmann::json& e, int rank, bool paused) {
  const auto& a = e.at("args");
  Event g;
  g.kind = EventKind::Group;
  g.rank = rank;
  g.beginNs = nanos(e["ts"].get<double>());
  g.endNs = paused ? g.beginNs + nanos(e["dur"].get<double>()) - 1 : g.beginNs;
  g.step = a.value("step", -1);
  g.microBatch = a.value("micro_batch", 0);
  g.op = indexOf(a.value("kind", ""), groupName, kGroupKindCount).value_or(0);
  g.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
  g.text = a.value("label", "");
  return g;
}

}  // namespace

LoadedTrace loadChromeTrace(const std::string& path) {
  LoadedTrace out;
  const auto text = files::readFileText(path, out.error, files::kMaxTraceBytes);
  if (!text) return out;
  auto parsed = files::parseUserJson(*text);
  auto& json = parsed.value;
  if (json.is_discarded() || !json.is_object() || !json.contains("traceEvents") || !json["traceEvents"].is_array()) {
    out.error = "'" + path + "' is not a shardscope trace (Chrome trace JSON written by --trace)" +
                (parsed.error.empty() ? "" : ": " + parsed.error) + ".";
    return out;
  }
  for (size_t i = 0; i < json["traceEvents"].size(); ++i) {
    if (!json["traceEvents"][i].is_object()) {
      out.error = "'" + path + "' is not a shardscope trace: its event " + std::to_string(i + 1) + " is a " +
                  json["traceEvents"][i].type_name() + ", not an object (Chrome trace JSON written by --trace).";
      return out;
    }
  }
  if (json.contains("otherData") && json["otherData"].is_object()) {
    (void)applyConfigJson(json["otherData"], out.config);  // best effort: keys from toJson()
  }
  std::vector<Event> events;
  std::map<int, RoleBytes> lastMemory;
  std::map<std::pair<int, int32_t>, RoleBytes> lastUnitMemory;
  int ranks = 0;
  try {
    for (const auto& e : json["traceEvents"]) {
      if (!e.contains("pid") || !e.contains("ph")) continue;
      const auto pid = e["pid"].is_number_integer() ? e["pid"].get<int64_t>() : int64_t{-1};
      if (pid < 0 || pid >= kMaxTraceRanks) {
        out.error = "'" + path + "' has an event whose pid is " + files::shownValue(e["pid"]) +
                    "; in a shardscope trace the pid is the rank, a whole number from 0 to " +
                    std::to_string(kMaxTraceRanks - 1) + ". Open a trace written by --trace or the app's Export.";
        return out;
      }
      const int rank = static_cast<int>(pid);
      ranks = std::max(ranks, rank + 1);
      const std::string ph = e["ph"];
      if (ph == "X" && e.value("cat", "") == "pause") {
        events.push_back(groupEvent(e, rank, /*paused=*/true));
      } else if (ph == "i" && e.value("cat", "") == "group") {
        events.push_back(groupEvent(e, rank, /*paused=*/false));
      } else if (ph == "X") {
        const auto& a = e["args"];
        Event ev;
        ev.rank = rank;
        ev.beginNs = nanos(e["ts"].get<double>());
        ev.endNs = ev.beginNs + nanos(e["dur"].get<double>()) - 1;
        ev.step = a.value("step", -1);
        ev.microBatch = a.value("micro_batch", 0);
        if (e.value("cat", "") == "compute") {
          ev.kind = EventKind::Compute;
          ev.op = indexOf(a.value("kind", ""), computeName, 4).value_or(0);
          ev.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
          ev.text = a.value("unit", "");
          ev.pausedNs = static_cast<int64_t>(a.value("paused_us", 0.0) * 1e3);
        } else {
          ev.kind = EventKind::Collective;
          auto op = indexOf(a.value("op", ""), opName, kCollectiveOpCount);
          if (!op) continue;
          ev.op = *op;
          ev.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
          ev.bytes = a.value("bytes", int64_t{0});
          ev.bytesOut = a.value("bytes_out", int64_t{0});
          ev.worldSize = a.value("group_size", 0);
          ev.processGroup = indexOf(a.value("process_group", ""), processGroupOf, kProcessGroupCount).value_or(0);
          ev.issueNs = nanos(a.value("issue_us", e["ts"].get<double>()));
          ev.text = collectiveText(a.value("unit", ""), a.value("implementation", ""),
                                   static_cast<CollectiveOp>(*op));
        }
        events.push_back(std::move(ev));
      } else if (ph == "C" && e.value("name", "").rfind(kUnitMemoryPrefix, 0) == 0) {
        const int32_t unit = unitFromName(e["name"].get<std::string>().substr(std::strlen(kUnitMemoryPrefix)));
        if (unit == kNoUnit) continue;
        RoleBytes& last = lastUnitMemory[{rank, unit}];
        for (auto it = e["args"].begin(); it != e["args"].end(); ++it) {
          auto role = indexOf(it.key(), roleName, kMemoryRoleCount);
          if (!role) continue;
          const int64_t delta = it.value().get<int64_t>() - last[*role];
          last[*role] += delta;
          // The same role "moved" into the unit: per-unit bytes change, the rank's totals do not.
          Event m;
          m.kind = EventKind::Memory;
          m.rank = rank;
          m.beginNs = nanos(e["ts"].get<double>());
          m.role = *role;
          m.fromRole = *role;
          m.unit = unit;
          m.bytes = delta;
          if (delta != 0) events.push_back(m);
        }
      } else if (ph == "C" && e.value("name", "") == "memory") {
        // Counter samples become per-role deltas against the rank's previous sample.
        RoleBytes now = lastMemory[rank];
        for (auto it = e["args"].begin(); it != e["args"].end(); ++it) {
          if (auto role = indexOf(it.key(), roleName, kMemoryRoleCount)) now[*role] = it.value().get<int64_t>();
        }
        const int64_t t = nanos(e["ts"].get<double>());
        bool changed = false;
        for (int i = 0; i < kMemoryRoleCount; ++i) {
          const int64_t delta = now[i] - lastMemory[rank][i];
          if (delta == 0) continue;
          Event m;
          m.kind = EventKind::Memory;
          m.rank = rank;
          m.beginNs = t;
          m.role = static_cast<uint8_t>(i);
          m.bytes = delta;
          events.push_back(m);
          changed = true;
        }
        if (!changed) {  // keep the sample's time even when nothing changed
          Event m;
          m.kind = EventKind::Memory;
          m.rank = rank;
          m.beginNs = t;
          events.push_back(m);
        }
        lastMemory[rank] = now;
      }
    }
  } catch (const nlohmann::json::exception& ex) {
    out.error = "'" + path + "' has a malformed event (" + ex.what() + ").";
    return out;
  }
  // Step spans double as step ends, so step times and throughput come back too.
  std::vector<Event> steps;
  for (const auto& e : events) {
    if (e.kind == EventKind::Compute && static_cast<ComputeKind>(e.op) == ComputeKind::Step) {
      Event s = e;
      s.kind = EventKind::StepEnd;
      steps.push_back(s);
    }
  }
  events.insert(events.end(), steps.begin(), steps.end());
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  out.recording.reset(ranks);
  for (const auto& e : events) out.recording.add(e);
  if (out.config.world != ranks && ranks > 0) out.config.world = ranks;
  return out;
}

}  // namespace shardscope::trace
