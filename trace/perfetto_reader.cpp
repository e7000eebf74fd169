#include "trace/perfetto_reader.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "files/user_json.h"
#include "trace/chrome_trace.h"
#include "trace/enum_names.h"
#include "trace/perfetto_trace.h"
#include "trace/proto_wire.h"
#include "trace/rank_placements.h"

namespace shardscope::trace {

namespace {

constexpr int kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;  // TrackEvent.Type
constexpr uint64_t kBootTime = 6;  // the builtin clock of a packet, unless it or its sequence names another

// A repeated varint field's values: one per field unpacked, or many in one packed field.
bool repeatedVarints(const proto::Field& f, std::vector<uint64_t>& out) {
  if (f.type == proto::kVarint) {
    out.push_back(f.bits);
    return true;
  }
  if (f.type != proto::kBytes) return false;
  uint64_t value = 0;
  int shift = 0;
  for (char c : f.bytes) {
    const auto byte = static_cast<uint8_t>(c);
    if (shift >= 64) return false;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
    if (!(byte & 0x80)) {
      out.push_back(value);
      value = 0;
      shift = 0;
    }
  }
  return shift == 0;
}
constexpr size_t kMaxPacketBytes = size_t{64} << 20;  // shardscope's packets are under 1 KiB; a run's config a few

struct CounterSample {
  int64_t tNs;
  int role;
  int64_t value;  // the role's bytes from then on
};

// The values of one memory lane at one time, until one of a later time comes: one sample
// (PerfettoTraceReader::memorySample). The writer puts each lane's values in time order.
struct PendingSample {
  int64_t tNs = -1;
  std::vector<CounterSample> values;
  RoleBytes last{};
};

// A memory counter track's lane, told by its name: "memory ROLE", "host memory ROLE",
// "unit memory blocks.3 ROLE", "unit host memory blocks.3 ROLE". Role -1: not a lane.
struct CounterLane {
  int role = -1;
  int space = 0;  // 1: the host's
  int32_t unit = kNoUnit;
};

CounterLane counterLaneOf(const std::string& name) {
  const size_t lastSpace = name.rfind(' ');
  if (lastSpace == std::string::npos) return {};
  const auto role = names::indexOf(std::string_view(name).substr(lastSpace + 1), names::role, kMemoryRoleCount);
  if (!role) return {};
  CounterLane lane;
  lane.space = name.rfind("host ", 0) == 0 || name.rfind("unit host ", 0) == 0 ? 1 : 0;
  if (name.rfind("unit ", 0) == 0) {
    const size_t unitAt = name.rfind(' ', lastSpace - 1) + 1;
    lane.unit = unitFromName(name.substr(unitAt, lastSpace - unitAt));
    if (lane.unit == kNoUnit) return {};
  }
  lane.role = *role;
  return lane;
}

struct Track {
  int rank = -1;     // -1: the run's own track
  std::string name;  // "" for a rank's process track
  // Worked out once, as the track is described, not at each of its counter values.
  CounterLane lane;
  PendingSample* pending = nullptr;  // the lane's, once it has had a value
};

// A debug annotation as read: a number (an integer or a real), or a string (interned).
struct Value {
  int64_t number = 0;
  double real = 0;
  std::string text;
};
// An event's few annotations, by name: a short list searched in turn (no map and its nodes to
// make for every slice read).
using Annotations = std::vector<std::pair<std::string, Value>>;

const Value* find(const Annotations& a, std::string_view key) {
  for (const auto& [name, value] : a) {
    if (name == key) return &value;
  }
  return nullptr;
}

// Why a time is refused (after what it is): past kMaxTimeNs a sum of times overflows.
constexpr const char* kTimeRange =
    " past 2^62 ns (146 years) from its clock's zero, either way, where no trace's times lie: the file is damaged";

struct OpenSlice {
  std::string name;
  int64_t beginNs;
  Annotations args;
};

int64_t numberOr(const Annotations& a, std::string_view key, int64_t fallback) {
  const Value* v = find(a, key);
  return v ? v->number : fallback;
}
double realOr(const Annotations& a, std::string_view key, double fallback) {
  const Value* v = find(a, key);
  return v ? v->real : fallback;
}
const std::string& textOr(const Annotations& a, std::string_view key) {
  static const std::string none;
  const Value* v = find(a, key);
  return v ? v->text : none;
}

class PerfettoTraceReader {
 public:
  explicit PerfettoTraceReader(LoadedTrace& out) : out_(out) {}

  // False (with error()) for a packet the reader cannot take.
  bool packet(std::string_view bytes);
  void finish();
  const std::string& error() const { return error_; }
  const RunFacts& facts() const { return facts_; }  // the run's, from the trace's end (none: defaults)

 private:
  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }
  bool trackDescriptor(std::string_view bytes);
  bool internedData(std::string_view bytes);
  bool trackEvent(std::string_view bytes, int64_t tNs);
  // A packet sequence's clock: the trace's own (boot time) unless its defaults name another; an
  // incremental one (shardscope's counters) counts each packet's timestamp from the one before.
  struct SequenceClock {
    uint64_t defaultClock = kBootTime;
    uint64_t incrementalId = 0;  // 0: none
    int64_t last = 0;            // the incremental clock's reading
    int64_t offset = 0;          // boot time less the incremental clock
    // The time, or false for one past kMaxTimeNs (a damaged file's; summed on, it would overflow).
    bool timeOf(int64_t timestamp, uint64_t clockId, int64_t& tNs) {
      if (!plausibleTimeNs(timestamp)) return false;
      if (clockId != incrementalId || incrementalId == 0) {
        tNs = timestamp;
        return true;
      }
      if (!plausibleTimeNs(last + timestamp)) return false;
      last += timestamp;
      tNs = last + offset;
      return plausibleTimeNs(tNs);
    }
  };
  bool packetDefaults(std::string_view bytes, SequenceClock& clock);
  bool clockSnapshot(std::string_view bytes, SequenceClock& clock);
  // A counter event's extra counter values (TrackEvent.extra_counter_track_uuids and _values).
  bool extraCounters(const std::vector<uint64_t>& tracks, const std::vector<uint64_t>& values, int64_t tNs);
  bool annotation(std::string_view bytes, Annotations& into);
  bool endSlice(const Track& track, OpenSlice slice, int64_t endNs);  // false (with error()) for a time past 2^62 ns
  // A time an annotation of `event` holds (in ns), checked as the packets' times are.
  bool annotatedTime(const std::string& event, const Annotations& args, const char* key, int64_t fallback, int64_t& ns);
  // What a collective's slice and a failed one's instant (`event`) carry of it, into `e` (its
  // begin known); false (with error()) for a time past 2^62 ns.
  bool collectiveFields(const std::string& event, const Annotations& args, int op, Event& e);
  bool failedCollective(const Track& track, const std::string& name, int64_t tNs, const Annotations& args);
  bool counter(Track& track, int64_t tNs, int64_t value);  // false (with error()) for a value past 1 PiB
  bool instant(const Track& track, const std::string& name, int64_t tNs, const Annotations& args);
  void memorySample(int rank, int space, int32_t unit, PendingSample& pending);
  void add(const Event& e) {
    if (e.rank >= out_.recording.ranks()) out_.recording.ensureRanks(e.rank + 1);
    out_.recording.add(e);
  }

  LoadedTrace& out_;
  std::string error_;
  RunFacts facts_;
  std::unordered_map<uint64_t, Track> tracks_;
  std::unordered_map<uint64_t, uint64_t> parents_;
  std::unordered_map<uint64_t, std::string> names_, annotationNames_, strings_;
  std::unordered_map<uint64_t, std::vector<OpenSlice>> open_;
  // Per (rank, space, unit): the values read at the lane's latest time (its nodes do not move:
  // a track keeps a pointer to its own).
  std::map<std::tuple<int, int, int32_t>, PendingSample> counters_;
  std::unordered_map<uint64_t, SequenceClock> clocks_;  // by packet sequence
  std::vector<uint64_t> extraTracks_, extraValues_;     // trackEvent()'s
};

bool PerfettoTraceReader::packet(std::string_view bytes) {
  proto::Reader fields(bytes);
  proto::Field f;
  int64_t timestamp = 0;
  uint64_t sequence = 0, clockId = 0;  // 0: the sequence's default clock
  std::string_view event, defaults, snapshot;
  bool hasEvent = false;
  while (fields.next(f)) {
    if (f.number == 8 && f.type == proto::kVarint)
      timestamp = f.asInt();
    else if (f.number == 10 && f.type == proto::kVarint)
      sequence = f.bits;
    else if (f.number == 58 && f.type == proto::kVarint)
      clockId = f.bits;
    else if (f.number == 59 && f.type == proto::kBytes)
      defaults = f.bytes;
    else if (f.number == 6 && f.type == proto::kBytes)
      snapshot = f.bytes;
    else if (f.number == 60 && f.type == proto::kBytes && !trackDescriptor(f.bytes))
      return false;
    else if (f.number == 12 && f.type == proto::kBytes && !internedData(f.bytes))
      return false;
    else if (f.number == 11 && f.type == proto::kBytes)
      event = f.bytes, hasEvent = true;
  }
  if (fields.failed()) return fail("has a damaged packet");
  SequenceClock& clock = clocks_[sequence];
  if (!defaults.empty() && !packetDefaults(defaults, clock)) return fail("has damaged packet defaults");
  if (!snapshot.empty() && !clockSnapshot(snapshot, clock)) return false;
  if (!hasEvent) return true;
  int64_t tNs = 0;
  if (!clock.timeOf(timestamp, clockId != 0 ? clockId : clock.defaultClock, tNs)) {
    return fail("has an event whose timestamp, " + std::to_string(timestamp) + " ns, puts it" + kTimeRange);
  }
  return trackEvent(event, tNs + 1);  // +1: RunRecording reads time 0 as none
}

bool PerfettoTraceReader::packetDefaults(std::string_view bytes, SequenceClock& clock) {
  proto::Reader fields(bytes);
  proto::Field f;
  while (fields.next(f)) {
    if (f.number == 58 && f.type == proto::kVarint) clock.defaultClock = f.bits;
  }
  return !fields.failed();
}

// The sequence's incremental clock, as the snapshot reads it beside the trace's own (boot time);
// false (with error()) for a damaged snapshot.
bool PerfettoTraceReader::clockSnapshot(std::string_view bytes, SequenceClock& clock) {
  proto::Reader clocks(bytes);
  proto::Field c;
  int64_t bootTime = 0, incremental = 0;
  uint64_t incrementalId = 0;
  while (clocks.next(c)) {
    if (c.number != 1 || c.type != proto::kBytes) continue;
    proto::Reader fields(c.bytes);
    proto::Field f;
    uint64_t id = 0;
    int64_t reading = 0;
    bool isIncremental = false;
    while (fields.next(f)) {
      if (f.number == 1 && f.type == proto::kVarint) id = f.bits;
      if (f.number == 2 && f.type == proto::kVarint) reading = f.asInt();
      if (f.number == 3 && f.type == proto::kVarint) isIncremental = f.bits != 0;
    }
    if (fields.failed()) return fail("has a damaged clock snapshot");
    if (id == kBootTime) bootTime = reading;
    if (isIncremental) incrementalId = id, incremental = reading;
  }
  if (clocks.failed()) return fail("has a damaged clock snapshot");
  if (!plausibleTimeNs(bootTime) || !plausibleTimeNs(incremental) || !plausibleTimeNs(bootTime - incremental)) {
    return fail("has a clock snapshot (the boot clock at " + std::to_string(bootTime) + " ns, its own at " +
                std::to_string(incremental) + " ns) with a time" + kTimeRange);
  }
  if (incrementalId != 0) {
    clock.incrementalId = incrementalId;
    clock.last = incremental;
    clock.offset = bootTime - incremental;
  }
  return true;
}

bool PerfettoTraceReader::trackDescriptor(std::string_view bytes) {
  proto::Reader fields(bytes);
  proto::Field f;
  uint64_t uuid = 0, parent = 0;
  Track track;
  bool process = false;
  while (fields.next(f)) {
    if (f.number == 1 && f.type == proto::kVarint)
      uuid = f.bits;
    else if (f.number == 5 && f.type == proto::kVarint)
      parent = f.bits;
    else if (f.number == 2 && f.type == proto::kBytes)
      track.name = std::string(f.bytes);
    else if (f.number == 3 && f.type == proto::kBytes) {
      process = true;
      proto::Reader p(f.bytes);
      proto::Field pf;
      while (p.next(pf)) {
        if (pf.number == 1 && pf.type == proto::kVarint)
          track.rank = static_cast<int>(pf.asInt()) - 1;  // pid = rank + 1
      }
    }
  }
  if (fields.failed()) return fail("has a damaged track descriptor");
  if (process && (track.rank < 0 || track.rank >= kMaxRanks)) {
    return fail("has a process track of pid " + std::to_string(track.rank + 1) +
                "; shardscope writes rank R as pid R + 1, "
                "up to " +
                std::to_string(kMaxRanks) + " ranks. Open a trace written by --trace FILE.pftrace");
  }
  if (!process && parent != 0) {
    const auto p = tracks_.find(parent);
    if (p == tracks_.end()) return fail("has a track whose parent was never described");
    track.rank = p->second.rank;
  }
  if (process && track.rank >= out_.recording.ranks()) out_.recording.ensureRanks(track.rank + 1);
  if (track.rank >= 0) track.lane = counterLaneOf(track.name);
  tracks_[uuid] = std::move(track);
  return true;
}

bool PerfettoTraceReader::internedData(std::string_view bytes) {
  proto::Reader fields(bytes);
  proto::Field f;
  while (fields.next(f)) {
    auto* table = f.number == 2 ? &names_ : f.number == 3 ? &annotationNames_ : f.number == 29 ? &strings_ : nullptr;
    if (!table || f.type != proto::kBytes) continue;
    proto::Reader entry(f.bytes);
    proto::Field e;
    uint64_t iid = 0;
    std::string text;
    while (entry.next(e)) {
      if (e.number == 1 && e.type == proto::kVarint)
        iid = e.bits;
      else if (e.number == 2 && e.type == proto::kBytes)
        text = std::string(e.bytes);
    }
    (*table)[iid] = std::move(text);
  }
  return !fields.failed() || fail("has damaged interned data");
}

bool PerfettoTraceReader::annotation(std::string_view bytes, Annotations& into) {
  proto::Reader fields(bytes);
  proto::Field f;
  std::string key;
  Value value;
  while (fields.next(f)) {
    if (f.number == 1 && f.type == proto::kVarint) {
      const auto it = annotationNames_.find(f.bits);
      if (it == annotationNames_.end()) return fail("names an annotation it never interned");
      key = it->second;
    } else if (f.number == 4 && f.type == proto::kVarint) {
      value.number = f.asInt();
    } else if (f.number == 5 && f.type == proto::kFixed64) {
      value.real = f.asDouble();
    } else if (f.number == 17 && f.type == proto::kVarint) {
      const auto it = strings_.find(f.bits);
      if (it == strings_.end()) return fail("holds a string it never interned");
      value.text = it->second;
    }
  }
  if (fields.failed()) return fail("has a damaged annotation");
  for (auto& [name, held] : into) {
    if (name == key) {
      held = std::move(value);
      return true;
    }
  }
  into.emplace_back(std::move(key), std::move(value));
  return true;
}

bool PerfettoTraceReader::extraCounters(const std::vector<uint64_t>& tracks, const std::vector<uint64_t>& values,
                                        int64_t tNs) {
  if (tracks.size() != values.size()) return fail("has a counter event whose extra values and tracks differ in number");
  for (size_t i = 0; i < tracks.size(); ++i) {
    const auto track = tracks_.find(tracks[i]);
    if (track == tracks_.end()) return fail("has a counter on a track it never described");
    if (!counter(track->second, tNs, static_cast<int64_t>(values[i]))) return false;
  }
  return true;
}

bool PerfettoTraceReader::trackEvent(std::string_view bytes, int64_t tNs) {
  proto::Reader fields(bytes);
  proto::Field f;
  int type = 0;
  uint64_t trackUuid = 0, nameIid = 0;
  int64_t counterValue = 0;
  // A packet's other counters at its time, in vectors kept from one event to the next.
  auto& extraTracks = extraTracks_;
  auto& extraValues = extraValues_;
  extraTracks.clear();
  extraValues.clear();
  Annotations args;
  while (fields.next(f)) {
    if (f.number == 31 || f.number == 12) {
      if (!repeatedVarints(f, f.number == 31 ? extraTracks : extraValues)) return fail("has a damaged counter");
    } else if (f.number == 9 && f.type == proto::kVarint)
      type = static_cast<int>(f.bits);
    else if (f.number == 11 && f.type == proto::kVarint)
      trackUuid = f.bits;
    else if (f.number == 10 && f.type == proto::kVarint)
      nameIid = f.bits;
    else if (f.number == 30 && f.type == proto::kVarint)
      counterValue = f.asInt();
    else if (f.number == 4 && f.type == proto::kBytes && !annotation(f.bytes, args))
      return false;
  }
  if (fields.failed()) return fail("has a damaged track event");
  const auto track = tracks_.find(trackUuid);
  if (track == tracks_.end()) return fail("has an event on a track it never described");
  const auto name = names_.find(nameIid);
  if ((type == kSliceBegin || type == kInstant) && name == names_.end())
    return fail("names an event it never interned");
  auto& open = open_[trackUuid];
  switch (type) {
    case kSliceBegin:
      open.push_back({name->second, tNs, std::move(args)});
      return true;
    case kSliceEnd:
      if (open.empty()) return fail("ends a slice it never began");
      if (!endSlice(track->second, std::move(open.back()), tNs)) return false;
      open.pop_back();
      return true;
    case kInstant:
      return instant(track->second, name->second, tNs, args);
    case kCounter:
      return counter(track->second, tNs, counterValue) && extraCounters(extraTracks, extraValues, tNs);
    default:
      return true;  // a kind shardscope does not write: left out
  }
}

bool PerfettoTraceReader::annotatedTime(const std::string& event, const Annotations& args, const char* key,
                                        int64_t fallback, int64_t& ns) {
  ns = numberOr(args, key, fallback);
  if (plausibleTimeNs(ns)) return true;
  return fail("has an event \"" + event + "\" whose " + key + ", " + std::to_string(ns) + ", is" + kTimeRange);
}

bool PerfettoTraceReader::collectiveFields(const std::string& event, const Annotations& args, int op, Event& e) {
  e.op = static_cast<uint8_t>(op);
  e.bytes = numberOr(args, "bytes", 0);
  e.bytesOut = numberOr(args, "bytes_out", 0);
  e.worldSize = static_cast<int32_t>(numberOr(args, "group_size", 0));
  if (!annotatedTime(event, args, "issue_ns", e.beginNs - 1, e.issueNs)) return false;
  e.issueNs += 1;
  // An all-to-all's own part, a send's or recv's peer: -1 where it was not recorded.
  if (isPointToPoint(static_cast<CollectiveOp>(op))) e.peer = static_cast<int32_t>(numberOr(args, "peer", -1));
  if (static_cast<CollectiveOp>(op) == CollectiveOp::AllToAll) e.ownPartBytes = numberOr(args, "own_part_bytes", -1);
  e.processGroup = names::indexOf(textOr(args, "process_group"), names::processGroup, kProcessGroupCount).value_or(0);
  e.sizeUnknown = numberOr(args, "size_unknown", 0) != 0 ? 1 : 0;
  e.text = collectiveText(textOr(args, "unit"), textOr(args, "implementation"), static_cast<CollectiveOp>(op));
  return true;
}

bool PerfettoTraceReader::endSlice(const Track& track, OpenSlice slice, int64_t endNs) {
  if (track.rank < 0) return true;
  Event e;
  e.rank = track.rank;
  e.beginNs = slice.beginNs;
  e.endNs = endNs;
  e.step = static_cast<int32_t>(numberOr(slice.args, "step", -1));
  e.microBatch = static_cast<int32_t>(numberOr(slice.args, "micro_batch", 0));
  e.phase = names::indexOf(textOr(slice.args, "phase"), names::phase, names::kPhaseCount).value_or(0);
  if (track.name == "event groups") {  // a pause at the step gate before a group
    e.kind = EventKind::Group;
    e.op = names::indexOf(textOr(slice.args, "kind"), names::group, kGroupKindCount).value_or(0);
    e.text = textOr(slice.args, "label");
  } else if (const auto op = names::indexOf(textOr(slice.args, "op"), names::op, kCollectiveOpCount)) {
    e.kind = EventKind::Collective;
    if (!collectiveFields(slice.name, slice.args, *op, e)) return false;
  } else {
    e.kind = EventKind::Compute;
    e.op = names::indexOf(textOr(slice.args, "kind"), names::compute, kComputeKindCount).value_or(0);
    e.text = textOr(slice.args, "unit");
    if (!annotatedTime(slice.name, slice.args, "paused_ns", 0, e.pausedNs)) return false;
    e.loss = realOr(slice.args, "loss", 0.0);  // a step's (traces before it was written: 0)
  }
  // Spans arrive as they end, an outer one after those inside it: the recording places each by its begin.
  add(e);
  // Step spans double as step ends, so step times and throughput come back too: timed as the rank
  // timed the step (traces written before those times were kept give the span's).
  if (e.kind == EventKind::Compute && static_cast<ComputeKind>(e.op) == ComputeKind::Step) {
    e.kind = EventKind::StepEnd;
    if (!annotatedTime(slice.name, slice.args, "step_begin_ns", e.beginNs - 1, e.beginNs) ||
        !annotatedTime(slice.name, slice.args, "step_end_ns", e.endNs - 1, e.endNs)) {
      return false;
    }
    e.beginNs += 1;  // as every time read: RunRecording reads time 0 as none
    e.endNs += 1;
    add(e);
  }
  return true;
}

// A collective the backend failed, where the rank saw it fail (EventKind::CollectiveFailed).
bool PerfettoTraceReader::failedCollective(const Track& track, const std::string& name, int64_t tNs,
                                           const Annotations& args) {
  const auto op = names::indexOf(textOr(args, "op"), names::op, kCollectiveOpCount);
  if (!op) return true;  // an op this shardscope does not know: left out, as its slices are
  Event e;
  e.kind = EventKind::CollectiveFailed;
  e.rank = track.rank;
  e.beginNs = tNs;
  e.step = static_cast<int32_t>(numberOr(args, "step", -1));
  e.microBatch = static_cast<int32_t>(numberOr(args, "micro_batch", 0));
  e.phase = names::indexOf(textOr(args, "phase"), names::phase, names::kPhaseCount).value_or(0);
  if (!collectiveFields(name, args, *op, e)) return false;
  add(e);
  return true;
}

bool PerfettoTraceReader::instant(const Track& track, const std::string& name, int64_t tNs, const Annotations& args) {
  if (track.rank < 0) {  // the run's own track: its config and the ranks' facts
    if (name == kPerfettoConfigEvent) {
      const auto config = files::parseUserJson(textOr(args, "config"));
      if (config.error.empty())
        (void)config::applyConfigJson(config.value, out_.config);  // best effort, as the JSON reader
    } else if (name == kPerfettoFactsEvent) {
      facts_ = runFactsOf(files::parseUserJson(textOr(args, "facts")).value);  // applied once the ranks are known
    }
    return true;
  }
  if (track.name == kPerfettoFailedCollectivesTrack) return failedCollective(track, name, tNs, args);
  Event g;
  g.kind = EventKind::Group;
  g.rank = track.rank;
  g.beginNs = g.endNs = tNs;
  g.step = static_cast<int32_t>(numberOr(args, "step", -1));
  g.microBatch = static_cast<int32_t>(numberOr(args, "micro_batch", 0));
  g.op = names::indexOf(textOr(args, "kind"), names::group, kGroupKindCount).value_or(0);
  g.phase = names::indexOf(textOr(args, "phase"), names::phase, names::kPhaseCount).value_or(0);
  g.text = textOr(args, "label");
  add(g);
  return true;
}

// A value of a memory lane's counter (counterLaneOf); other counters are left out.
bool PerfettoTraceReader::counter(Track& track, int64_t tNs, int64_t value) {
  if (track.rank < 0 || track.lane.role < 0) return true;
  if (value < 0 || value > kMaxMemoryBytes) {
    return fail("has a memory counter of " + std::to_string(value) + " bytes on \"" + track.name + "\" of rank " +
                std::to_string(track.rank) + ": a lane holds 0 to 1 PiB");
  }
  if (!track.pending) track.pending = &counters_[{track.rank, track.lane.space, track.lane.unit}];
  PendingSample& pending = *track.pending;
  if (tNs != pending.tNs) {
    if (tNs < pending.tNs) return true;  // not written by shardscope (its lanes go forward): left out
    memorySample(track.rank, track.lane.space, track.lane.unit, pending);
    pending.tNs = tNs;
  }
  pending.values.push_back({tNs, track.lane.role, value});
  return true;
}

// One lane's values at one time as one sample: Memory events, added as the rank recorded them. Two
// roles that changed by the same bytes the opposite ways are one move (a re-attribution, fromRole
// -> role): never a moment with both or neither. A unit's changes are moves into the unit, which
// leave the rank's totals as they are.
void PerfettoTraceReader::memorySample(int rank, int space, int32_t unit, PendingSample& pending) {
  if (pending.values.empty()) return;
  std::vector<std::pair<int, int64_t>> changes;  // (role, delta)
  for (const auto& v : pending.values) {
    if (v.value != pending.last[v.role]) changes.emplace_back(v.role, v.value - pending.last[v.role]);
    pending.last[v.role] = v.value;
  }
  Event m;
  m.kind = EventKind::Memory;
  m.rank = rank;
  m.space = static_cast<uint8_t>(space);
  m.beginNs = pending.tNs;
  if (unit == kNoUnit && changes.size() == 2 && changes[0].second == -changes[1].second) {
    const bool firstGives = changes[0].second < 0;
    m.fromRole = static_cast<uint8_t>(firstGives ? changes[0].first : changes[1].first);
    m.role = static_cast<uint8_t>(firstGives ? changes[1].first : changes[0].first);
    m.bytes = std::abs(changes[0].second);
    add(m);
  } else {
    if (changes.empty() && unit == kNoUnit) changes.emplace_back(pending.values.front().role, 0);  // it kept its time
    for (const auto& [role, delta] : changes) {
      m.role = static_cast<uint8_t>(role);
      m.fromRole = unit == kNoUnit ? kNoRole : static_cast<uint8_t>(role);
      m.unit = unit;
      m.bytes = delta;
      add(m);
    }
  }
  pending.values.clear();
}

void PerfettoTraceReader::finish() {
  for (auto& [key, pending] : counters_) memorySample(std::get<0>(key), std::get<1>(key), std::get<2>(key), pending);
}

// A file read in large blocks, for a reader that looks a little ahead of where it is (a byte at a
// time through the stream takes a fifth of a trace's reading).
class BlockReader {
 public:
  explicit BlockReader(std::istream& in) : in_(in) {}
  // The bytes from the read position on: at least `n` of them, fewer only where the file ends.
  std::string_view ahead(size_t n) {
    if (buffer_.size() - at_ < n) refill(n);
    return std::string_view(buffer_).substr(at_);
  }
  void skip(size_t n) { at_ += n; }

 private:
  static constexpr size_t kBlockBytes = size_t{4} << 20;
  void refill(size_t n) {
    buffer_.erase(0, at_);
    at_ = 0;
    const size_t held = buffer_.size();
    buffer_.resize(std::max(n, kBlockBytes));
    in_.read(buffer_.data() + held, static_cast<std::streamsize>(buffer_.size() - held));
    buffer_.resize(held + static_cast<size_t>(in_.gcount()));
  }
  std::istream& in_;
  std::string buffer_;
  size_t at_ = 0;
};

}  // namespace

bool looksLikePerfettoTrace(const std::string& path) {
  // Its first packet (Trace.packet: field 1, length-delimited) decodes as a protobuf message. JSON
  // starts with '{' or white space; one that starts with a newline (0x0A too) fails the decoding.
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  proto::Reader trace(head);
  proto::Field packet;
  if (!trace.next(packet) || packet.number != 1 || packet.type != proto::kBytes || packet.bytes.empty()) return false;
  proto::Reader fields(packet.bytes);
  proto::Field f;
  while (fields.next(f)) {}
  return !fields.failed();
}

LoadedTrace loadPerfettoTrace(const std::string& path, size_t detailEvents) {
  LoadedTrace out;
  if (detailEvents > 0) out.recording.keepDetailWithinOverRanks(detailEvents, {});
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out.error = "cannot read '" + path + "': check that the file exists.";
    return out;
  }
  PerfettoTraceReader reader(out);
  BlockReader blocks(in);
  for (size_t index = 1;; ++index) {
    // Trace.packet: field 1, length-delimited (key 0x0A), then the packet's size as a varint.
    const std::string_view head = blocks.ahead(11);
    if (head.empty()) break;
    uint64_t size = 0;
    size_t used = 1;
    bool sized = false;
    for (int shift = 0; shift < 64 && used < head.size() && !sized; shift += 7) {
      const auto byte = static_cast<uint8_t>(head[used++]);
      size |= static_cast<uint64_t>(byte & 0x7f) << shift;
      sized = !(byte & 0x80);
    }
    if (head[0] != 0x0A || !sized || size > kMaxPacketBytes) {
      out.error = "'" + path + "' is not a shardscope Perfetto trace past its packet " + std::to_string(index - 1) +
                  " (written by --trace FILE.pftrace; a file cut short or of another kind)";
      return out;
    }
    const std::string_view packet = blocks.ahead(used + size);
    if (packet.size() < used + size) {
      out.error = "'" + path + "' ends inside its packet " + std::to_string(index) + ": the file is cut short";
      return out;
    }
    if (!reader.packet(packet.substr(used, size))) {
      out.error = "'" + path + "' " + reader.error() + " (packet " + std::to_string(index) + ")";
      return out;
    }
    blocks.skip(used + size);
  }
  reader.finish();
  const int ranks = out.recording.ranks();
  if (out.config.world != ranks && ranks > 0) out.config.world = ranks;
  applyRunFacts(reader.facts(), out);
  return out;
}

}  // namespace shardscope::trace
