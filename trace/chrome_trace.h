// Exports of a RunRecording: Chrome trace JSON (Perfetto and chrome://tracing open it) and the
// memory samples as CSV.
//
// Chrome trace layout: pid = rank (named "rank R"); tid 1 "compute" holds complete events
// (ph "X", cat "compute") for steps, per-unit forward/backward and optimizer steps; tid 2 "comm"
// holds collectives (ph "X", cat "comm", args: op, bytes, bytes_out, unit, phase, group_size,
// algbw_GBps, busbw_GBps, implementation); counter events (ph "C") named "memory" carry one
// series per role in bytes, and under --offload cpu counters named "host memory" the host's, by
// tensor role. Times are microseconds since the first event of the run. After
// traceEvents, "shardscope_run" holds what the ranks reported of themselves (RunFacts).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/run_recording.h"
#include "trace/trace_writer.h"

namespace shardscope::trace {

inline constexpr const char* kRunFactsKey = "shardscope_run";
inline constexpr const char* kHostMemoryCounter = "host memory";
// Counters of one model unit's bytes by role, the unit's name after the prefix ("unit memory
// blocks.3"); the host's (--offload cpu) apart from the device's.
inline constexpr const char* kUnitMemoryCounterPrefix = "unit memory ";
inline constexpr const char* kUnitHostMemoryCounterPrefix = "unit host memory ";
// The category of an instant on a rank's comm row where it saw a collective fail
// (EventKind::CollectiveFailed): the collective's fields, and no span, as it never ended.
inline constexpr const char* kFailedCollectiveCategory = "collective_failed";
nlohmann::json runFactsJson(const RunFacts& facts);
// Fields missing or of another type read as zero or empty (a trace from before they were kept).
RunFacts runFactsOf(const nlohmann::json& json);

void writeChromeTrace(std::ostream& out, const RunRecording& recording, const nlohmann::json& metadata,
                      const RunFacts& facts = {});

// The same trace written as a run goes (a long headless run streams its detail to disk instead of
// holding it): the header and every rank's names first, then each rank's detail in pieces, each
// later than that rank's previous piece, then the closing. Times are since `originNs`.
class ChromeTraceWriter : public TraceWriter {
 public:
  ChromeTraceWriter(std::ostream& out, const nlohmann::json& metadata, int ranks);
  void write(int rank, const RankTimeline& detail, int64_t originNs) override;
  void finish(const RunFacts& facts = {}) override;

 private:
  void emit(const nlohmann::json& event);
  void writeCompute(int rank, const RankTimeline& detail, int64_t originNs);
  void writeCollectives(int rank, const RankTimeline& detail, int64_t originNs);
  void writeGroups(int rank, const RankTimeline& detail, int64_t originNs);
  void writeMemory(int rank, const RankTimeline& detail, int64_t originNs);  // per unit, then the rank's
  void writeUnitCounters(int rank, const char* prefix, const std::vector<UnitMemoryTrack>& units, int64_t originNs);
  // One counter sample per entry of `track`, a series for each of its first `roles` roles.
  void writeRoleCounter(int rank, const char* name, const RoleTrack& track, int roles, int64_t originNs);
  std::ostream& out_;
  bool first_ = true;
};

// Columns: rank, t_ns (since the run's first event), one column per role in bytes, total.
void writeMemoryCsv(std::ostream& out, const RunRecording& recording);
// Its header line, and the rows of one rank's detail: written in pieces as the trace is.
void writeMemoryCsvHeader(std::ostream& out);
void writeMemoryCsvRows(std::ostream& out, int rank, const RankTimeline& detail, int64_t originNs);

}  // namespace shardscope::trace
