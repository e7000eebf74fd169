// What every trace file writer of a RunRecording does, whatever its format (chrome_trace.h's JSON,
// perfetto_trace.h's protobuf): the ranks' detail in pieces as a run goes, then the closing with
// what the ranks reported of themselves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/run_recording.h"

namespace shardscope::trace {

// What the ranks reported of themselves in their RunInfo events, known only once they are up: kept
// at the end of a trace, so that the trace opened again shows the capacity line, MFU and the
// ranks' placements as the run did.
struct RunFacts {
  int64_t parameterCount = 0;
  int64_t deviceMemoryBytes = 0;            // rank 0's GPU; 0 on CPU
  double measuredPeakFlops = 0;             // the matmul peak rank 0 measured; 0 when none was
  std::vector<std::string> rankPlacements;  // [rank] its device, backend, cores
};

class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  // One rank's detail, each piece of a rank later than its previous one; times since `originNs`.
  virtual void write(int rank, const RankTimeline& detail, int64_t originNs) = 0;
  virtual void finish(const RunFacts& facts) = 0;
};

}  // namespace shardscope::trace
