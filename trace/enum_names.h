// The event vocabulary's enums read back from their names (events.h's *Name functions), for the
// readers of shardscope's own trace files (trace_reader.h's JSON, perfetto_reader.h's protobuf).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/events.h"

namespace shardscope::trace::names {

inline std::optional<uint8_t> indexOf(std::string_view name, const char* (*nameOf)(int), int count) {
  for (int i = 0; i < count; ++i) {
    if (name == nameOf(i)) return static_cast<uint8_t>(i);
  }
  return std::nullopt;
}

inline const char* role(int i) { return memoryRoleName(static_cast<MemoryRole>(i)); }
inline const char* op(int i) { return collectiveOpName(static_cast<CollectiveOp>(i)); }
inline const char* processGroup(int i) { return processGroupName(static_cast<ProcessGroup>(i)); }
inline const char* compute(int i) { return computeKindName(static_cast<ComputeKind>(i)); }
inline const char* phase(int i) { return phaseName(static_cast<Phase>(i)); }
inline const char* group(int i) { return groupKindName(static_cast<GroupKind>(i)); }
constexpr int kPhaseCount = 4;

}  // namespace shardscope::trace::names
