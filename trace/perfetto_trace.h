// A RunRecording as Perfetto's protobuf trace (FILE.pftrace): what Perfetto's UI and trace_processor
// open at any length, at a tenth of the Chrome JSON's bytes, and what `shardscope view` reads back.
//
// Layout (field numbers from Perfetto's trace.proto, written by hand in proto_wire.h): one packet
// sequence. Each rank is a process track "rank R" (pid R + 1: pid 0 is the kernel's to Perfetto)
// with child tracks: "compute" and "comm" lanes of slices (a second "comm 2" where spans overlap
// without nesting, as prefetched all-gathers do), "event groups" of instants (a pause at the step
// gate is a slice), "failed collectives" of instants (where the rank saw a collective fail: the
// comm slice's annotations, none for its end), and byte counters (UNIT_SIZE_BYTES) "memory ROLE",
// "host memory ROLE" under
// --offload cpu, "unit memory blocks.3 ROLE" and "unit host memory ...". A counter carries a value
// when it changed. Slice and annotation names, and annotation strings, are interned once per trace.
// Slices carry the figures the Chrome trace's args do as debug annotations (op, bytes, bytes_out,
// group_size, issue_ns, ...). A track "shardscope" holds the run's config and the ranks' facts as
// two instants at time 0. Times are ns since the first event of the run.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace_writer.h"

namespace shardscope::trace {

inline constexpr const char* kPerfettoRunTrack = "shardscope";
inline constexpr const char* kPerfettoConfigEvent = "shardscope run";
inline constexpr const char* kPerfettoFactsEvent = "shardscope facts";
inline constexpr const char* kPerfettoFailedCollectivesTrack = "failed collectives";

class PerfettoTraceWriter : public TraceWriter {
 public:
  PerfettoTraceWriter(std::ostream& out, const nlohmann::json& metadata, int ranks);
  void write(int rank, const RankTimeline& detail, int64_t originNs) override;
  void finish(const RunFacts& facts) override;

 private:
  struct Annotation;  // a debug annotation to write: interned name, and an int or an interned string
  struct OpenSlice {  // a slice begun and not yet ended: its END waits for its time
    int64_t endNs;    // since the trace's origin
    uint64_t order;   // later-begun ends first on ties: the innermost slice closes first
    uint64_t track;
    bool operator>(const OpenSlice& o) const { return endNs != o.endNs ? endNs > o.endNs : order < o.order; }
  };
  using PendingEnds = std::priority_queue<OpenSlice, std::vector<OpenSlice>, std::greater<>>;
  struct Lane {
    uint64_t track = 0;
    std::vector<std::pair<int64_t, int64_t>> open;  // [begin, end] of its slices still open, nested
  };
  struct RankState {
    std::vector<Lane> computeLanes, commLanes;
    PendingEnds computeEnds, commEnds;
    RoleBytes device{}, host{};                          // the last values written: zeros before the first sample
    std::map<std::pair<int32_t, int>, RoleBytes> units;  // (unit, space) -> last values
    std::map<std::tuple<int32_t, int, int>, uint64_t> counterTracks;  // (unit or kNoUnit, space, role) -> uuid
    bool counterClock = false;  // its counters' sequence and incremental clock are described
    int64_t lastCounterNs = 0;  // that clock's reading: the last counter's time
  };

  void writeCompute(int rank, const RankTimeline& detail, int64_t originNs);
  void writeCollectives(int rank, const RankTimeline& detail, int64_t originNs);
  void writeGroups(int rank, const RankTimeline& detail, int64_t originNs);
  void writeFailedCollectives(int rank, const RankTimeline& detail, int64_t originNs);
  // A collective's figures (a span's, or a failed one's Event), as its slice or instant carries them.
  template <class Collective>
  std::vector<Annotation> collectiveAnnotations(const Collective& e, int64_t originNs);
  struct CounterValue {
    int64_t tNs;  // since the trace's origin
    uint64_t track;
    int64_t value;
  };
  using CounterLane = std::vector<CounterValue>;  // one lane's values, in time order
  // A lane's counters (space 0: the device's, 1: the host's), a value where a role changed.
  void roleCounters(int rank, int space, const RoleTrack& track, int roles, RoleBytes& last, int64_t originNs,
                    CounterLane& out);
  // Each unit's, a lane each.
  void unitCounters(int rank, int space, const std::vector<UnitMemoryTrack>& units, int64_t originNs,
                    std::vector<CounterLane>& lanes);
  // The lanes merged in time order, one packet per time: the first value the event's own, the rest
  // its extra counter values (a memory sample's role and unit changes share one packet's header).
  void writeCounters(int rank, const std::vector<CounterLane>& lanes);
  void counterEvent(int rank, const CounterValue* first, size_t count);
  // The rank's counters' own packet sequence, with an incremental clock: each counter packet's
  // timestamp is the time since the one before (a few bytes, not the 6 of a time since the origin).
  void describeCounterClock(int rank);
  uint64_t counterTrack(int rank, int32_t unit, int space, int role);
  // A slice on the first of `lanes` it nests in or follows on (a new lane "NAME k" when none),
  // after the ENDs due by its begin.
  void slice(int rank, const char* laneName, std::vector<Lane>& lanes, PendingEnds& ends, int64_t beginNs,
             int64_t endNs, const std::string& name, const std::vector<Annotation>& annotations, int64_t originNs);
  void flushEnds(PendingEnds& ends, int64_t untilNs);  // ends due by then (ns since the origin); INT64_MAX: all
  void event(uint64_t track, int type, int64_t tNs, const std::string* name, const std::vector<Annotation>& annotations,
             const int64_t* counter = nullptr);
  uint64_t track(int rank, const std::string& name, bool counter);
  uint64_t intern(std::unordered_map<std::string, uint64_t>& table, const std::string& value, int kind);
  Annotation number(const char* name, int64_t value);
  Annotation real(const char* name, double value);
  Annotation text(const char* name, const std::string& value);
  void emit(const std::string& packet);

  std::ostream& out_;
  std::vector<RankState> state_;
  std::map<std::pair<int, std::string>, uint64_t> tracks_;  // (rank, name) -> uuid; rank -1: the run's track
  std::unordered_map<std::string, uint64_t> names_, annotationNames_, strings_;
  std::string interned_;  // entries first used by the packet being built (InternedData)
  std::string packet_;    // scratch for one packet
  std::string framed_;    // and for it framed as a Trace's field
  uint64_t nextUuid_ = 1;
  uint64_t order_ = 0;
};

}  // namespace shardscope::trace
