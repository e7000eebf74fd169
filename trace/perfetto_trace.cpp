#include "trace/perfetto_trace.h"

#include <algorithm>
#include <queue>

#include "trace/chrome_trace.h"
#include "trace/proto_wire.h"

namespace shardscope::trace {

// Field numbers of Perfetto's protos/perfetto/trace (trace.proto, trace_packet.proto,
// track_event/*.proto, interned_data.proto), as the `perfetto` Python package's schema has them.
namespace field {
constexpr uint32_t kTracePacket = 1;  // Trace.packet
constexpr uint32_t kClockSnapshot = 6, kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kTimestampClockId = 58, kTracePacketDefaults = 59, kTrackDescriptor = 60,
                   kFirstPacketOnSequence = 87;                                         // TracePacket
constexpr uint32_t kClocks = 1, kClockId = 1, kClockTimestamp = 2, kIsIncremental = 3;  // ClockSnapshot(.Clock)
constexpr uint32_t kDefaultTimestampClockId = 58;                                       // TracePacketDefaults
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kParentUuid = 5, kCounter = 8;   // TrackDescriptor
constexpr uint32_t kPid = 1, kProcessName = 6;                                          // ProcessDescriptor
constexpr uint32_t kCounterUnit = 3;                                                    // CounterDescriptor
constexpr uint32_t kAnnotations = 4, kType = 9, kNameIid = 10, kTrackUuid = 11, kCounterValue = 30,
                   kExtraCounterValues = 12, kExtraCounterTrackUuids = 31;                         // TrackEvent
constexpr uint32_t kAnnotationNameIid = 1, kIntValue = 4, kDoubleValue = 5, kStringValueIid = 17;  // DebugAnnotation
constexpr uint32_t kEventNames = 2, kAnnotationNames = 3, kAnnotationStrings = 29;                 // InternedData
constexpr uint32_t kIid = 1, kInternedText = 2;  // EventName, DebugAnnotationName, InternedString
}  // namespace field

namespace {
constexpr uint64_t kSequence = 1;              // the sequence of the slices, instants and descriptors
constexpr uint64_t kFirstCounterSequence = 2;  // rank R's counters: sequence 2 + R
constexpr uint64_t kBootTime = 6;              // the builtin clock of a packet that names none
constexpr uint64_t kIncrementalClock = 64;     // the first sequence-scoped clock id
constexpr uint64_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;  // SequenceFlags
constexpr uint64_t kUnitSizeBytes = 3;                                        // CounterDescriptor.Unit
constexpr int kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;     // TrackEvent.Type
}  // namespace

struct PerfettoTraceWriter::Annotation {
  uint64_t nameIid;
  bool isText;
  int64_t value;        // the number, or the interned string's iid
  bool isReal = false;  // a real number (`real`), not an integer
  double real = 0;
};

PerfettoTraceWriter::PerfettoTraceWriter(std::ostream& out, const nlohmann::json& metadata, int ranks)
    : out_(out), state_(static_cast<size_t>(ranks)) {
  packet_.clear();
  proto::Writer first(packet_);
  first.varint(field::kSequenceId, kSequence);
  first.varint(field::kSequenceFlags, kIncrementalStateCleared);
  first.varint(field::kFirstPacketOnSequence, 1);
  emit(packet_);
  for (int r = 0; r < ranks; ++r) track(r, "", false);  // the ranks' process tracks, in rank order
  const std::string name = kPerfettoConfigEvent;
  event(track(-1, kPerfettoRunTrack, false), kInstant, 0, &name, {text("config", metadata.dump())});
}

void PerfettoTraceWriter::emit(const std::string& packet) {
  framed_.clear();  // reused: one packet per event
  proto::Writer trace(framed_);
  trace.bytes(field::kTracePacket, packet);
  out_.write(framed_.data(), static_cast<std::streamsize>(framed_.size()));
}

uint64_t PerfettoTraceWriter::intern(std::unordered_map<std::string, uint64_t>& table, const std::string& value,
                                     int kind) {
  const auto [it, added] = table.try_emplace(value, table.size() + 1);
  const uint64_t iid = it->second;  // a lambda captures no structured binding in C++17 (clang refuses it)
  if (added) {
    proto::Writer interned(interned_);
    interned.message(static_cast<uint32_t>(kind), [&](proto::Writer& entry) {
      entry.varint(field::kIid, iid);
      entry.bytes(field::kInternedText, value);
    });
  }
  return iid;
}

PerfettoTraceWriter::Annotation PerfettoTraceWriter::number(const char* name, int64_t value) {
  return {intern(annotationNames_, name, field::kAnnotationNames), false, value};
}

PerfettoTraceWriter::Annotation PerfettoTraceWriter::real(const char* name, double value) {
  return {intern(annotationNames_, name, field::kAnnotationNames), false, 0, true, value};
}

PerfettoTraceWriter::Annotation PerfettoTraceWriter::text(const char* name, const std::string& value) {
  return {intern(annotationNames_, name, field::kAnnotationNames), true,
          static_cast<int64_t>(intern(strings_, value, field::kAnnotationStrings))};
}

// A track's uuid; its descriptor is written the first time it is asked for. rank -1: the run's
// own track; an empty name: the rank's process track, the parent of its others.
uint64_t PerfettoTraceWriter::track(int rank, const std::string& name, bool counter) {
  const auto [it, added] = tracks_.try_emplace({rank, name}, nextUuid_);
  const uint64_t uuid = it->second;  // a lambda captures no structured binding in C++17 (clang refuses it)
  if (!added) return uuid;
  ++nextUuid_;
  const uint64_t parent = rank >= 0 && !name.empty() ? track(rank, "", false) : 0;
  std::string packet;
  proto::Writer p(packet);
  p.varint(field::kSequenceId, kSequence);
  p.message(field::kTrackDescriptor, [&](proto::Writer& d) {
    d.varint(field::kUuid, uuid);
    if (parent != 0) d.varint(field::kParentUuid, parent);
    if (name.empty()) {
      d.message(field::kProcess, [&](proto::Writer& process) {
        process.varint(field::kPid, static_cast<uint64_t>(rank) + 1);
        process.bytes(field::kProcessName, "rank " + std::to_string(rank));
      });
    } else {
      d.bytes(field::kName, name);
    }
    if (counter) d.message(field::kCounter, [](proto::Writer& c) { c.varint(field::kCounterUnit, kUnitSizeBytes); });
  });
  emit(packet);
  return uuid;
}

void PerfettoTraceWriter::event(uint64_t track, int type, int64_t tNs, const std::string* name,
                                const std::vector<Annotation>& annotations, const int64_t* counter) {
  // Interned first: intern() appends what is new to interned_, which goes in this packet.
  const uint64_t nameIid = name ? intern(names_, *name, field::kEventNames) : 0;
  std::string body;
  proto::Writer e(body);
  e.varint(field::kType, static_cast<uint64_t>(type));
  e.varint(field::kTrackUuid, track);
  if (nameIid != 0) e.varint(field::kNameIid, nameIid);
  for (const auto& a : annotations) {
    e.message(field::kAnnotations, [&](proto::Writer& d) {
      d.varint(field::kAnnotationNameIid, a.nameIid);
      if (a.isText)
        d.varint(field::kStringValueIid, static_cast<uint64_t>(a.value));
      else if (a.isReal)
        d.float64(field::kDoubleValue, a.real);
      else
        d.number(field::kIntValue, a.value);
    });
  }
  if (counter) e.number(field::kCounterValue, *counter);
  packet_.clear();
  proto::Writer p(packet_);
  p.varint(field::kTimestamp, static_cast<uint64_t>(tNs));
  p.varint(field::kSequenceId, kSequence);
  // Only a packet that refers to interned names needs the sequence's state (a counter or an END
  // refers to none): two bytes less on most packets.
  if (name || !annotations.empty()) p.varint(field::kSequenceFlags, kNeedsIncrementalState);
  if (!interned_.empty()) {
    p.bytes(field::kInternedData, interned_);
    interned_.clear();
  }
  p.bytes(field::kTrackEvent, body);
  emit(packet_);
}

void PerfettoTraceWriter::flushEnds(PendingEnds& ends, int64_t untilNs) {
  while (!ends.empty() && ends.top().endNs <= untilNs) {
    const OpenSlice done = ends.top();
    ends.pop();
    event(done.track, kSliceEnd, done.endNs, nullptr, {});
  }
}

void PerfettoTraceWriter::slice(int rank, const char* laneName, std::vector<Lane>& lanes, PendingEnds& ends,
                                int64_t beginNs, int64_t endNs, const std::string& name,
                                const std::vector<Annotation>& annotations, int64_t originNs) {
  endNs = std::max(endNs, beginNs);
  flushEnds(ends, beginNs - originNs);  // what ended by now, so a lane's END comes before its next BEGIN
  Lane* chosen = nullptr;
  for (auto& lane : lanes) {
    while (!lane.open.empty() && lane.open.back().second <= beginNs) lane.open.pop_back();
    if (lane.open.empty() || lane.open.back().second >= endNs) {  // after its slices, or inside the innermost
      chosen = &lane;
      break;
    }
  }
  if (!chosen) {
    const size_t k = lanes.size();
    lanes.push_back({track(rank, k == 0 ? laneName : std::string(laneName) + " " + std::to_string(k + 1), false), {}});
    chosen = &lanes.back();
  }
  chosen->open.emplace_back(beginNs, endNs);
  event(chosen->track, kSliceBegin, beginNs - originNs, &name, annotations);
  ends.push({endNs - originNs, order_++, chosen->track});
}

void PerfettoTraceWriter::write(int rank, const RankTimeline& detail, int64_t originNs) {
  if (rank < 0) return;
  if (static_cast<size_t>(rank) >= state_.size()) state_.resize(static_cast<size_t>(rank) + 1);
  writeCompute(rank, detail, originNs);
  writeCollectives(rank, detail, originNs);
  writeFailedCollectives(rank, detail, originNs);
  writeGroups(rank, detail, originNs);
  RankState& s = state_[static_cast<size_t>(rank)];
  std::vector<CounterLane> lanes(2);  // the rank's own lanes first: at one time, the packet's own value
  roleCounters(rank, 0, detail.memory, kMemoryRoleCount, s.device, originNs, lanes[0]);
  roleCounters(rank, 1, detail.host.memory, kTensorRoleCount, s.host, originNs, lanes[1]);
  unitCounters(rank, 0, detail.units, originNs, lanes);
  unitCounters(rank, 1, detail.host.units, originNs, lanes);  // --offload cpu: the host's
  writeCounters(rank, lanes);
}

// A merge of the lanes by a heap of their heads (log of the lanes per value, not of the values: the
// writer is on the recording's hot path).
void PerfettoTraceWriter::writeCounters(int rank, const std::vector<CounterLane>& lanes) {
  using Head = std::pair<int64_t, size_t>;  // (time, lane): lower lanes first at one time
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  std::vector<size_t> at(lanes.size(), 0);
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (!lanes[i].empty()) heads.push({lanes[i][0].tNs, i});
  }
  std::vector<CounterValue> now;  // one time's values
  while (!heads.empty()) {
    const int64_t t = heads.top().first;
    now.clear();
    while (!heads.empty() && heads.top().first == t) {
      const size_t i = heads.top().second;
      heads.pop();
      while (at[i] < lanes[i].size() && lanes[i][at[i]].tNs == t) now.push_back(lanes[i][at[i]++]);
      if (at[i] < lanes[i].size()) heads.push({lanes[i][at[i]].tNs, i});
    }
    counterEvent(rank, now.data(), now.size());
  }
}

void PerfettoTraceWriter::describeCounterClock(int rank) {
  RankState& s = state_[static_cast<size_t>(rank)];
  s.counterClock = true;
  s.lastCounterNs = 0;
  packet_.clear();
  proto::Writer p(packet_);
  p.varint(field::kSequenceId, kFirstCounterSequence + static_cast<uint64_t>(rank));
  p.varint(field::kSequenceFlags, kIncrementalStateCleared);
  p.varint(field::kFirstPacketOnSequence, 1);
  p.message(field::kTracePacketDefaults,
            [](proto::Writer& d) { d.varint(field::kDefaultTimestampClockId, kIncrementalClock); });
  // The incremental clock reads 0 when the trace's time (boot time, as the other sequence's
  // packets name no clock) does: the first counter's timestamp is its time since the origin.
  p.message(field::kClockSnapshot, [](proto::Writer& snapshot) {
    snapshot.message(field::kClocks, [](proto::Writer& c) {
      c.varint(field::kClockId, kBootTime);
      c.varint(field::kClockTimestamp, 0);
    });
    snapshot.message(field::kClocks, [](proto::Writer& c) {
      c.varint(field::kClockId, kIncrementalClock);
      c.varint(field::kClockTimestamp, 0);
      c.varint(field::kIsIncremental, 1);
    });
  });
  emit(packet_);
}

void PerfettoTraceWriter::counterEvent(int rank, const CounterValue* first, size_t count) {
  RankState& s = state_[static_cast<size_t>(rank)];
  if (!s.counterClock) describeCounterClock(rank);
  std::string body;
  proto::Writer e(body);
  e.varint(field::kType, static_cast<uint64_t>(kCounter));
  e.varint(field::kTrackUuid, first->track);
  e.number(field::kCounterValue, first->value);
  for (size_t i = 1; i < count; ++i) e.varint(field::kExtraCounterTrackUuids, first[i].track);
  for (size_t i = 1; i < count; ++i) e.number(field::kExtraCounterValues, first[i].value);
  packet_.clear();
  proto::Writer p(packet_);
  if (first->tNs >= s.lastCounterNs) {
    p.varint(field::kTimestamp, static_cast<uint64_t>(first->tNs - s.lastCounterNs));
    s.lastCounterNs = first->tNs;
  } else {  // never expected (each rank's lanes go forward): its time in full, on the trace's clock
    p.varint(field::kTimestamp, static_cast<uint64_t>(first->tNs));
    p.varint(field::kTimestampClockId, kBootTime);
  }
  p.varint(field::kSequenceId, kFirstCounterSequence + static_cast<uint64_t>(rank));
  p.bytes(field::kTrackEvent, body);
  emit(packet_);
}

void PerfettoTraceWriter::writeCompute(int rank, const RankTimeline& t, int64_t originNs) {
  const auto stepEnds = stepEndsByStep(t);
  RankState& s = state_[static_cast<size_t>(rank)];
  for (const auto& e : t.compute) {
    std::vector<Annotation> a = {text("kind", computeKindName(static_cast<ComputeKind>(e.op))), text("unit", e.text()),
                                 text("phase", phaseName(static_cast<Phase>(e.phase))), number("step", e.step)};
    if (e.microBatch != 0) a.push_back(number("micro_batch", e.microBatch));
    const auto end = stepEnds.find(e.step);
    if (static_cast<ComputeKind>(e.op) == ComputeKind::Step && end != stepEnds.end()) {
      if (end->second->pausedNs > 0) a.push_back(number("paused_ns", end->second->pausedNs));
      a.push_back(real("loss", end->second->loss));
      // The step as the rank timed it, from before its batch to after its loss's all-reduce: the
      // step time a reader gives back (the slice is the training step's compute alone).
      a.push_back(number("step_begin_ns", end->second->beginNs - originNs));
      a.push_back(number("step_end_ns", end->second->endNs - originNs));
    }
    slice(rank, "compute", s.computeLanes, s.computeEnds, e.beginNs, e.endNs, computeSpanName(e), a, originNs);
  }
}

template <class Collective>
std::vector<PerfettoTraceWriter::Annotation> PerfettoTraceWriter::collectiveAnnotations(const Collective& e,
                                                                                        int64_t originNs) {
  const auto op = static_cast<CollectiveOp>(e.op);
  std::vector<Annotation> a = {text("op", collectiveOpName(op)),
                               number("bytes", e.bytes),
                               number("bytes_out", e.bytesOut),
                               text("unit", collectiveUnit(e)),
                               text("phase", phaseName(static_cast<Phase>(e.phase))),
                               number("group_size", e.worldSize),
                               number("step", e.step),
                               number("issue_ns", e.issueNs - originNs),
                               text("implementation", collectiveImplementation(e))};
  if (e.microBatch != 0) a.push_back(number("micro_batch", e.microBatch));
  if (e.processGroup != 0)
    a.push_back(text("process_group", processGroupName(static_cast<ProcessGroup>(e.processGroup))));
  if (op == CollectiveOp::AllToAll && e.ownPartBytes >= 0) a.push_back(number("own_part_bytes", e.ownPartBytes));
  if (isPointToPoint(op) && e.peer >= 0) a.push_back(number("peer", e.peer));
  if (e.sizeUnknown) a.push_back(number("size_unknown", 1));  // its bytes 0 are no measurement
  return a;
}

void PerfettoTraceWriter::writeCollectives(int rank, const RankTimeline& t, int64_t originNs) {
  RankState& s = state_[static_cast<size_t>(rank)];
  for (const auto& e : t.collectives) {
    slice(rank, "comm", s.commLanes, s.commEnds, e.beginNs, e.endNs, collectiveSpanName(e),
          collectiveAnnotations(e, originNs), originNs);
  }
}

// A collective the backend failed: an instant where the rank saw it fail, with what it was to move
// and when it was issued (EventKind::CollectiveFailed).
void PerfettoTraceWriter::writeFailedCollectives(int rank, const RankTimeline& t, int64_t originNs) {
  if (t.failedCollectives.empty()) return;
  const uint64_t lane = track(rank, kPerfettoFailedCollectivesTrack, false);
  for (const auto& e : t.failedCollectives) {
    const std::string name = collectiveSpanName(e) + " failed";
    event(lane, kInstant, e.beginNs - originNs, &name, collectiveAnnotations(e, originNs));
  }
}

void PerfettoTraceWriter::writeGroups(int rank, const RankTimeline& t, int64_t originNs) {
  if (t.groups.empty()) return;
  const uint64_t lane = track(rank, "event groups", false);
  for (const auto& g : t.groups) {
    std::vector<Annotation> a = {text("kind", groupKindName(static_cast<GroupKind>(g.op))), text("label", g.text()),
                                 text("phase", phaseName(static_cast<Phase>(g.phase))), number("step", g.step)};
    if (g.microBatch != 0) a.push_back(number("micro_batch", g.microBatch));
    // Groups come one after another: a pause at the step gate ends before the next group begins.
    if (g.endNs > g.beginNs) {
      const std::string name = "paused before " + g.text();
      event(lane, kSliceBegin, g.beginNs - originNs, &name, a);
      event(lane, kSliceEnd, g.endNs - originNs, nullptr, {});
    } else {
      event(lane, kInstant, g.beginNs - originNs, &g.text(), a);
    }
  }
}

// A counter track's uuid, cached by what it counts: a hot path (every memory sample writes one or
// two values), where building the track's name for each would cost more than the value.
uint64_t PerfettoTraceWriter::counterTrack(int rank, int32_t unit, int space, int role) {
  auto& cache = state_[static_cast<size_t>(rank)].counterTracks;
  const auto [it, added] = cache.try_emplace(std::make_tuple(unit, space, role), 0);
  if (!added) return it->second;
  const std::string roleName = memoryRoleName(static_cast<MemoryRole>(role));
  const std::string name =
      unit == kNoUnit ? std::string(space ? "host memory " : "memory ") + roleName
                      : std::string(space ? "unit host memory " : "unit memory ") + unitName(unit) + " " + roleName;
  it->second = track(rank, name, true);
  return it->second;
}

void PerfettoTraceWriter::roleCounters(int rank, int space, const RoleTrack& samples, int roles, RoleBytes& last,
                                       int64_t originNs, CounterLane& out) {
  for (size_t k = 0; k < samples.size(); ++k) {
    const RoleBytes bytes = samples.bytes(k);
    const int64_t t = samples.time(k) - originNs;
    bool any = false;
    for (int i = 0; i < roles; ++i) {
      if (bytes[i] == last[i]) continue;
      out.push_back({t, counterTrack(rank, kNoUnit, space, i), bytes[i]});
      any = true;
    }
    // A value when it changed; a sample that changed nothing keeps its time on the first role.
    if (!any) out.push_back({t, counterTrack(rank, kNoUnit, space, 0), bytes[0]});
    last = bytes;
  }
}

void PerfettoTraceWriter::unitCounters(int rank, int space, const std::vector<UnitMemoryTrack>& units, int64_t originNs,
                                       std::vector<CounterLane>& lanes) {
  RankState& s = state_[static_cast<size_t>(rank)];
  for (const auto& unit : units) {
    if (unit.unit == kNoUnit) continue;
    RoleBytes& last = s.units[{unit.unit, space}];  // zeros before its first sample
    CounterLane& out = lanes.emplace_back();
    for (size_t k = 0; k < unit.samples.size(); ++k) {
      const RoleBytes bytes = unit.samples.bytes(k);
      for (int i = 0; i < kTensorRoleCount; ++i) {
        if (bytes[i] == last[i]) continue;
        out.push_back({unit.samples.time(k) - originNs, counterTrack(rank, unit.unit, space, i), bytes[i]});
      }
      last = bytes;
    }
  }
}

void PerfettoTraceWriter::finish(const RunFacts& facts) {
  for (auto& s : state_) {
    flushEnds(s.computeEnds, INT64_MAX);
    flushEnds(s.commEnds, INT64_MAX);
  }
  const std::string name = kPerfettoFactsEvent;
  event(track(-1, kPerfettoRunTrack, false), kInstant, 0, &name, {text("facts", runFactsJson(facts).dump())});
  out_.flush();
}

}  // namespace shardscope::trace
