// The one event vocabulary shared by the engine (which records) and the controller/UI (which read).
// Plain structs with a type tag; timestamps are nanoseconds on the host's steady clock, sizes bytes.
// Append-only: new kinds go at the end so recorded streams stay readable.
#pragma once

#include <cstdint>
#include <string>

namespace shardscope::trace {

enum class EventKind : uint8_t {
  StepEnd,    // one training step finished on a rank: loss, step time
  RunInfo,    // a rank is up: world size, device, backend, parameter count
  RankError,  // a rank hit an error it can describe; it exits non-zero right after
  RunDone,    // a rank finished every step cleanly
};

const char* eventKindName(EventKind kind);

// Nanoseconds on the steady clock of this host; all ranks on one host share it.
int64_t nowNs();

struct Event {
  EventKind kind = EventKind::StepEnd;
  int32_t rank = 0;
  int32_t step = -1;        // -1 when the event is not tied to a step
  int64_t beginNs = 0;      // host steady clock
  int64_t endNs = 0;        // host steady clock
  double loss = 0.0;        // StepEnd: global mean loss of the step
  int64_t count = 0;        // RunInfo: parameter count
  int32_t worldSize = 0;    // RunInfo
  std::string text;         // RunInfo: device/backend description; RankError: message
};

}  // namespace shardscope::trace
