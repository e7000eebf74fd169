#include "trace/events.h"

#include <chrono>

namespace shardscope::trace {

const char* eventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::StepEnd: return "step_end";
    case EventKind::RunInfo: return "run_info";
    case EventKind::RankError: return "rank_error";
    case EventKind::RunDone: return "run_done";
  }
  return "unknown";
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace shardscope::trace
