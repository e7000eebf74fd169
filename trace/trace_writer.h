// What every trace file writer of a RunRecording does, whatever its format (chrome_trace.h's JSON,
// perfetto_trace.h's protobuf): the ranks' detail in pieces as a run goes, then the closing with
// what the ranks reported of themselves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/run_recording.h"

namespace shardscope::trace {

// How a run ended, as its summary's "status" says. Unknown: a record that does not say (a trace
// written before it was kept, the app's export).
enum class RunStatus : uint8_t {
  Unknown,
  Ok,           // every step trained and recorded
  Incomplete,   // every step trained, but the recording lost events (full buffers) or steps
  Failed,       // a rank failed, died or stalled, or the loss diverged
  Interrupted,  // stopped by the user or a signal
};
inline const char* runStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::Unknown:
      return "";
    case RunStatus::Ok:
      return "ok";
    case RunStatus::Incomplete:
      return "incomplete";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Interrupted:
      return "interrupted";
  }
  return "";
}
inline RunStatus runStatusOfName(std::string_view name) {
  for (auto s : {RunStatus::Ok, RunStatus::Incomplete, RunStatus::Failed, RunStatus::Interrupted}) {
    if (name == runStatusName(s)) return s;
  }
  return RunStatus::Unknown;
}

// What the ranks reported of themselves in their RunInfo events, known only once they are up, and
// how the run ended: kept at the end of a trace, so that the trace opened again shows the capacity
// line, MFU and the ranks' placements as the run did, and says what its recording lost.
struct RunFacts {
  int64_t parameterCount = 0;
  int64_t deviceMemoryBytes = 0;            // rank 0's GPU; 0 on CPU
  double measuredPeakFlops = 0;             // the matmul peak rank 0 measured; 0 when none was
  std::vector<std::string> rankPlacements;  // [rank] its device, backend, cores
  RunStatus status = RunStatus::Unknown;
  std::string error;                    // why, when it failed or was interrupted
  std::optional<int64_t> stepsTrained;  // the steps every rank finished; none: not said
  std::vector<int64_t> droppedEvents;   // [rank] events its full buffer could not record
};

class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  // One rank's detail, each piece of a rank later than its previous one; times since `originNs`.
  virtual void write(int rank, const RankTimeline& detail, int64_t originNs) = 0;
  virtual void finish(const RunFacts& facts) = 0;
};

}  // namespace shardscope::trace
