#include "trace/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "files/chrome_trace_stream.h"
#include "files/file_text.h"
#include "files/host_memory.h"
#include "files/user_json.h"
#include "trace/enum_names.h"
#include "trace/chrome_trace.h"
#include "trace/rank_placements.h"

namespace shardscope::trace {

namespace {

// +1 keeps the first event off 0, which RunRecording reads as "no timestamp".
int64_t nanos(double micros) { return static_cast<int64_t>(micros * 1e3 + 0.5) + 1; }

using names::indexOf;
const auto roleName = names::role;
const auto opName = names::op;
const auto processGroupOf = names::processGroup;
const auto computeName = names::compute;
const auto phaseNameOf = names::phase;
const auto groupName = names::group;

// An event group (instant) or a pause at the step gate before one (slice).
Event groupEvent(const nlohmann::json& e, int rank, bool paused) {
  const auto& a = e.at("args");
  Event g;
  g.kind = EventKind::Group;
  g.rank = rank;
  g.beginNs = nanos(e.at("ts").get<double>());
  g.endNs = paused ? g.beginNs + nanos(e.at("dur").get<double>()) - 1 : g.beginNs;
  g.step = a.value("step", -1);
  g.microBatch = a.value("micro_batch", 0);
  g.op = indexOf(a.value("kind", ""), groupName, kGroupKindCount).value_or(0);
  g.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
  g.text = a.value("label", "");
  return g;
}

// The kinds of the fields shardscope's traces give their events (chrome_trace.h), for a message that
// names the field a malformed event has wrong.
using files::JsonKind;
const std::vector<files::ExpectedField> kEventFields = {{"ts", JsonKind::Number},  {"dur", JsonKind::Number},
                                                        {"ph", JsonKind::String},  {"name", JsonKind::String},
                                                        {"cat", JsonKind::String}, {"args", JsonKind::Object}};
std::vector<files::ExpectedField> argsFields(const nlohmann::json& event) {
  std::vector<files::ExpectedField> fields;
  const auto args = event.find("args");
  if (event.value("ph", "") == "C" && args != event.end() && args->is_object()) {  // a counter: every series a number
    for (auto it = args->begin(); it != args->end(); ++it) fields.push_back({it.key().c_str(), JsonKind::Number});
    return fields;
  }
  for (const char* number : {"step", "micro_batch", "paused_us", "loss", "bytes", "bytes_out", "own_part_bytes", "peer",
                             "group_size", "issue_us", "step_begin_us", "step_end_us", "size_unknown"}) {
    fields.push_back({number, JsonKind::Number});
  }
  for (const char* text : {"kind", "phase", "unit", "op", "process_group", "implementation", "label"}) {
    fields.push_back({text, JsonKind::String});
  }
  return fields;
}

// Turns a trace's events, one at a time as they are parsed, into a recording: the file is never
// held as one tree, nor its events as one list (a long run's trace has millions).
class TraceEventReader {
 public:
  // `inTimeOrder`: each rank's events are handed to the recording in time order (a recording that
  // folds its older steps as it reads needs them so); else as the file holds them.
  TraceEventReader(std::string path, RunRecording& recording, bool inTimeOrder)
      : path_(std::move(path)), recording_(recording), inTimeOrder_(inTimeOrder) {}

  // False, with error() saying why, for an event that makes the file unreadable.
  bool read(const nlohmann::json& e) {
    ++index_;
    if (!e.is_object()) {
      return fail("is not a shardscope trace: its event " + std::to_string(index_) + " is a " + e.type_name() +
                  ", not an object (Chrome trace JSON written by --trace).");
    }
    try {  // fields are read with at(): a const object's [] of a missing key is undefined
      return readEvent(e);
    } catch (const nlohmann::json::exception&) {
      // Named by its field, not by the JSON library's "type must be number, but is object".
      std::string field = files::wrongKindOfField(e, kEventFields);
      if (field.empty()) field = files::wrongKindOfField(e.value("args", nlohmann::json()), argsFields(e), "args.");
      return fail("has a malformed event: in its event " + std::to_string(index_) + ", " +
                  (field.empty() ? "a field holds a value of the wrong kind" : field) +
                  ". Open a trace written by --trace or the app's Export.");
    }
  }
  const std::string& error() const { return error_; }
  int ranks() const { return ranks_; }

  // The rank's events read since another rank's, into the recording in time order. shardscope's
  // writer puts a rank's detail together (lane by lane, a run's older steps before its newer), so
  // the events of one stretch sorted by begin are the rank's in time order.
  void flush() {
    std::stable_sort(segment_.begin(), segment_.end(),
                     [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
    for (const Event& e : segment_) recording_.add(e);
    segment_.clear();
  }

 private:
  bool fail(const std::string& what) {
    error_ = "'" + path_ + "' " + what;
    return false;
  }

  void add(const Event& e) {
    if (e.rank >= recording_.ranks()) recording_.ensureRanks(e.rank + 1);
    if (!inTimeOrder_) {
      recording_.add(e);
      return;
    }
    if (!segment_.empty() && segment_.back().rank != e.rank) flush();
    segment_.push_back(e);
  }

  bool readEvent(const nlohmann::json& e) {
    if (!e.contains("pid") || !e.contains("ph")) return true;
    const auto pid = e["pid"].is_number_integer() ? e["pid"].get<int64_t>() : int64_t{-1};
    if (pid < 0 || pid >= kMaxRanks) {
      return fail("has an event whose pid is " + files::shownValue(e["pid"]) +
                  "; in a shardscope trace the pid is the rank, a whole number from 0 to " +
                  std::to_string(kMaxRanks - 1) + ". Open a trace written by --trace or the app's Export.");
    }
    const int rank = static_cast<int>(pid);
    ranks_ = std::max(ranks_, rank + 1);
    if (!timesInRange(e)) return false;
    const std::string ph = e.at("ph");
    if (ph == "X" && e.value("cat", "") == "pause") {
      add(groupEvent(e, rank, /*paused=*/true));
    } else if (ph == "i" && e.value("cat", "") == "group") {
      add(groupEvent(e, rank, /*paused=*/false));
    } else if (ph == "i" && e.value("cat", "") == kFailedCollectiveCategory) {
      readFailedCollective(e, rank);
    } else if (ph == "X") {
      readSpan(e, rank);
    } else if (ph == "C" && e.value("name", "").rfind(kUnitMemoryCounterPrefix, 0) == 0) {
      return readUnitMemory(e, rank, MemorySpace::Device);
    } else if (ph == "C" && e.value("name", "").rfind(kUnitHostMemoryCounterPrefix, 0) == 0) {
      return readUnitMemory(e, rank, MemorySpace::Host);
    } else if (ph == "C" && e.value("name", "") == "memory") {
      return readMemory(e, rank, MemorySpace::Device);
    } else if (ph == "C" && e.value("name", "") == kHostMemoryCounter) {
      return readMemory(e, rank, MemorySpace::Host);
    }
    return true;
  }

  void readSpan(const nlohmann::json& e, int rank);
  void readFailedCollective(const nlohmann::json& e, int rank);
  bool readCollectiveFields(const nlohmann::json& e, Event& ev);
  bool readUnitMemory(const nlohmann::json& e, int rank, MemorySpace space);
  bool readMemory(const nlohmann::json& e, int rank, MemorySpace space);
  // A counter's bytes for a role (0 to kMaxMemoryBytes), or false with the reason.
  bool counterBytes(const nlohmann::json& value, const std::string& role, int rank, int64_t& bytes);
  // Whether the event's times and durations (and a span's end) lie within kMaxTimeNs; false with
  // the reason.
  bool timesInRange(const nlohmann::json& e);
  bool timeInRange(const nlohmann::json& us, const std::string& field);

  std::string path_;
  RunRecording& recording_;
  bool inTimeOrder_ = false;
  std::vector<Event> segment_;  // inTimeOrder_: one rank's events, not yet handed over
  std::string error_;
  size_t index_ = 0;
  int ranks_ = 0;
  std::map<std::pair<int, MemorySpace>, RoleBytes> lastMemory_;  // per rank and memory space
  std::map<std::pair<int, MemorySpace>, int64_t> lastMemoryTime_;
  std::map<std::tuple<int, MemorySpace, int32_t>, RoleBytes> lastUnitMemory_;  // per rank, space, unit
};

void TraceEventReader::readSpan(const nlohmann::json& e, int rank) {
  const auto& a = e.at("args");
  Event ev;
  ev.rank = rank;
  ev.beginNs = nanos(e.at("ts").get<double>());
  ev.endNs = ev.beginNs + nanos(e.at("dur").get<double>()) - 1;
  ev.step = a.value("step", -1);
  ev.microBatch = a.value("micro_batch", 0);
  if (e.value("cat", "") == "compute") {
    ev.kind = EventKind::Compute;
    ev.op = indexOf(a.value("kind", ""), computeName, kComputeKindCount).value_or(0);
    ev.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
    ev.text = a.value("unit", "");
    ev.pausedNs = static_cast<int64_t>(a.value("paused_us", 0.0) * 1e3);
    ev.loss = a.value("loss", 0.0);  // a step's (traces before it was written: 0)
  } else {
    ev.kind = EventKind::Collective;
    if (!readCollectiveFields(e, ev)) return;
  }
  add(ev);
  // Step spans double as step ends, so step times and throughput come back too: timed as the rank
  // timed the step (traces written before those times were kept give the span's).
  if (ev.kind == EventKind::Compute && static_cast<ComputeKind>(ev.op) == ComputeKind::Step) {
    ev.kind = EventKind::StepEnd;
    if (a.contains("step_begin_us")) ev.beginNs = nanos(a.at("step_begin_us").get<double>());
    if (a.contains("step_end_us")) ev.endNs = nanos(a.at("step_end_us").get<double>());
    add(ev);
  }
}

void TraceEventReader::readFailedCollective(const nlohmann::json& e, int rank) {
  Event ev;
  ev.kind = EventKind::CollectiveFailed;
  ev.rank = rank;
  ev.beginNs = nanos(e.at("ts").get<double>());
  ev.step = e.at("args").value("step", -1);
  ev.microBatch = e.at("args").value("micro_batch", 0);
  if (readCollectiveFields(e, ev)) add(ev);
}

// What a collective's span and a failed one's instant share (their args); false for an op this
// shardscope does not know.
bool TraceEventReader::readCollectiveFields(const nlohmann::json& e, Event& ev) {
  const auto& a = e.at("args");
  auto op = indexOf(a.value("op", ""), opName, kCollectiveOpCount);
  if (!op) return false;
  ev.op = *op;
  ev.phase = indexOf(a.value("phase", ""), phaseNameOf, 4).value_or(0);
  ev.bytes = a.value("bytes", int64_t{0});
  ev.bytesOut = a.value("bytes_out", int64_t{0});
  ev.sizeUnknown = a.value("size_unknown", int64_t{0}) != 0 ? 1 : 0;
  if (*op == static_cast<int>(CollectiveOp::AllToAll)) ev.ownPartBytes = a.value("own_part_bytes", int64_t{-1});
  if (isPointToPoint(static_cast<CollectiveOp>(*op))) ev.peer = a.value("peer", -1);
  ev.worldSize = a.value("group_size", 0);
  ev.processGroup = indexOf(a.value("process_group", ""), processGroupOf, kProcessGroupCount).value_or(0);
  ev.issueNs = nanos(a.value("issue_us", e.at("ts").get<double>()));
  ev.text = collectiveText(a.value("unit", ""), a.value("implementation", ""), static_cast<CollectiveOp>(*op));
  return true;
}

bool TraceEventReader::counterBytes(const nlohmann::json& value, const std::string& role, int rank, int64_t& bytes) {
  bytes = value.get<int64_t>();
  if (bytes >= 0 && bytes <= kMaxMemoryBytes) return true;
  return fail("has a memory counter of " + files::shownValue(value) + " bytes for rank " + std::to_string(rank) +
              "'s " + role + " (event " + std::to_string(index_) +
              "): a lane holds 0 to 1 PiB. Open a trace written by --trace or the app's Export.");
}

// Checked before any is converted to nanoseconds (past int64's range that is undefined) or summed
// into a span's end (a fuzzed -2^63 overflowed there).
bool TraceEventReader::timesInRange(const nlohmann::json& e) {
  const auto ts = e.find("ts"), dur = e.find("dur");
  if (ts != e.end() && !timeInRange(*ts, "ts")) return false;
  if (dur != e.end() && !timeInRange(*dur, "dur")) return false;
  if (ts != e.end() && dur != e.end() &&
      !timeInRange(nlohmann::json(ts->get<double>() + dur->get<double>()), "ts\" + \"dur")) {
    return false;  // each part in range, their sum (the span's end) not
  }
  const auto args = e.find("args");
  if (args == e.end() || !args->is_object()) return true;
  for (const char* field : {"issue_us", "paused_us", "step_begin_us", "step_end_us"}) {
    const auto value = args->find(field);
    if (value != args->end() && !timeInRange(*value, std::string("args.") + field)) return false;
  }
  return true;
}

bool TraceEventReader::timeInRange(const nlohmann::json& us, const std::string& field) {
  if (plausibleTimeUs(us.get<double>())) return true;
  return fail("has a time of " + files::shownValue(us) + " us in its event " + std::to_string(index_) + " (\"" + field +
              "\"): a trace's times and durations lie within 2^62 ns (146 years) of its clock's zero, either way. "
              "Open a trace written by --trace or the app's Export.");
}

// Per-unit counters become the same role "moved" into the unit: per-unit bytes change, the rank's
// totals do not.
bool TraceEventReader::readUnitMemory(const nlohmann::json& e, int rank, MemorySpace space) {
  const char* prefix = space == MemorySpace::Host ? kUnitHostMemoryCounterPrefix : kUnitMemoryCounterPrefix;
  const int32_t unit = unitFromName(e.at("name").get<std::string>().substr(std::strlen(prefix)));
  if (unit == kNoUnit) return true;
  RoleBytes& last = lastUnitMemory_[{rank, space, unit}];
  for (auto it = e.at("args").begin(); it != e.at("args").end(); ++it) {
    auto role = indexOf(it.key(), roleName, kMemoryRoleCount);
    int64_t bytes = 0;
    if (!role) continue;
    if (!counterBytes(it.value(), it.key(), rank, bytes)) return false;
    const int64_t delta = bytes - last[*role];
    last[*role] += delta;
    Event m;
    m.kind = EventKind::Memory;
    m.rank = rank;
    m.beginNs = nanos(e.at("ts").get<double>());
    m.role = *role;
    m.fromRole = *role;
    m.unit = unit;
    m.bytes = delta;
    m.space = static_cast<uint8_t>(space);
    if (delta != 0) add(m);
  }
  return true;
}

// Counter samples become per-role deltas against the rank's previous sample, so they must come in
// time order, as shardscope writes them.
bool TraceEventReader::readMemory(const nlohmann::json& e, int rank, MemorySpace space) {
  const std::pair<int, MemorySpace> lane{rank, space};
  RoleBytes now = lastMemory_[lane];
  for (auto it = e.at("args").begin(); it != e.at("args").end(); ++it) {
    const auto role = indexOf(it.key(), roleName, kMemoryRoleCount);
    if (role && !counterBytes(it.value(), it.key(), rank, now[*role])) return false;
  }
  const int64_t t = nanos(e.at("ts").get<double>());
  auto last = lastMemoryTime_.find(lane);
  if (last != lastMemoryTime_.end() && t < last->second) {
    return fail("has memory samples of rank " + std::to_string(rank) + " out of time order (event " +
                std::to_string(index_) + " at " + files::shownValue(e.at("ts")) +
                " us comes after a later one); shardscope writes each rank's samples in time order. Open "
                "a trace written by --trace or the app's Export.");
  }
  lastMemoryTime_[lane] = t;
  bool changed = false;
  for (int i = 0; i < kMemoryRoleCount; ++i) {
    const int64_t delta = now[i] - lastMemory_[lane][i];
    if (delta == 0) continue;
    Event m;
    m.kind = EventKind::Memory;
    m.space = static_cast<uint8_t>(space);
    m.rank = rank;
    m.beginNs = t;
    m.role = static_cast<uint8_t>(i);
    m.bytes = delta;
    add(m);
    changed = true;
  }
  if (!changed) {  // keep the sample's time even when nothing changed
    Event m;
    m.kind = EventKind::Memory;
    m.space = static_cast<uint8_t>(space);
    m.rank = rank;
    m.beginNs = t;
    add(m);
  }
  lastMemory_[lane] = now;
  return true;
}

// The text an element of traceEvents holds, as a tree (discarded where it is not JSON, its error
// saying why).
files::UserJson elementOf(std::string_view text) { return files::parseUserJson(std::string(text)); }

}  // namespace

LoadedTrace loadChromeTrace(const std::string& path, size_t detailEvents) {
  LoadedTrace out;
  // Read, parsed and recorded as it comes (files/chrome_trace_stream.h): neither the file's text
  // nor its tree is ever whole. Its recording keeps 30 to 40 bytes of an event's 160 to 240 in the
  // file: a quarter, at most; folded to `detailEvents`, any length.
  // Folded, the recording stays within `detailEvents`, but a rank's stretch of events waits whole
  // for its time order (a trace written at a run's end: the rank's every event), up to the file's
  // bytes: read as far as free memory holds that.
  const auto limit = files::traceLimit(detailEvents > 0 ? 1.0 : 0.25);
  if (detailEvents > 0) out.recording.keepDetailWithinOverRanks(detailEvents, nullptr);
  TraceEventReader reader(path, out.recording, /*inTimeOrder=*/detailEvents > 0);
  nlohmann::json otherData, facts;
  files::ChromeTraceHandlers handlers;
  handlers.onMember = [&](const std::string& key, const nlohmann::json& value) {
    if (key == "otherData") otherData = value;
    if (key == kRunFactsKey) facts = value;
  };
  const auto readElement = [&](std::string_view text, size_t index) -> std::string {
    const auto element = elementOf(text);
    if (element.value.is_discarded())
      return "its event " + std::to_string(index) + " is not JSON (" + element.error + ")";
    return reader.read(element.value) ? "" : "stopped";  // the reader's own error says why
  };
  handlers.onEvent = [&](const files::ChromeEvent& event, size_t index) { return readElement(event.text, index); };
  handlers.onOtherElement = [&](std::string_view text, size_t index) { return readElement(text, index); };
  const auto problem = files::streamChromeTrace(path, handlers, limit.maxBytes, limit.why);
  reader.flush();
  if (!reader.error().empty()) {
    out.error = reader.error();
    return out;
  }
  if (problem.kind == files::TraceProblemKind::Unreadable) {
    out.error = "'" + path + "' " + problem.message;
    return out;
  }
  if (problem.kind != files::TraceProblemKind::None) {
    out.error =
        "'" + path + "' is not a shardscope trace (Chrome trace JSON written by --trace): " + problem.message + ".";
    return out;
  }
  if (otherData.is_object()) (void)config::applyConfigJson(otherData, out.config);  // best effort: keys from toJson()
  const int ranks = reader.ranks();
  out.recording.ensureRanks(ranks);  // a rank with names and nothing else
  if (out.config.world != ranks && ranks > 0) out.config.world = ranks;
  if (!facts.is_null()) applyRunFacts(runFactsOf(facts), out);
  return out;
}

void applyRunFacts(const RunFacts& facts, LoadedTrace& out) {
  out.parameterCount = facts.parameterCount;
  out.deviceMemoryBytes = facts.deviceMemoryBytes;
  out.measuredPeakFlops = facts.measuredPeakFlops;
  const int ranks = out.recording.ranks();
  if (ranks > 0 && static_cast<int>(facts.rankPlacements.size()) == ranks) {
    out.rankPlacements = facts.rankPlacements;
    out.device = describeRankPlacements(facts.rankPlacements);
  }
  out.runStatus = facts.status;
  out.runError = facts.error;
  out.stepsTrained = facts.stepsTrained;
  // A rank that dropped events may have recorded none at all (runFactsOf caps them at kMaxRanks).
  if (facts.droppedEvents.size() > static_cast<size_t>(ranks)) {
    out.recording.ensureRanks(static_cast<int>(facts.droppedEvents.size()));
  }
  for (size_t r = 0; r < facts.droppedEvents.size(); ++r) {
    if (facts.droppedEvents[r] <= 0) continue;
    Event dropped;
    dropped.kind = EventKind::Dropped;
    dropped.rank = static_cast<int>(r);
    dropped.droppedEvents = facts.droppedEvents[r];
    out.recording.add(dropped);
  }
}

namespace {

// Each line of a loader's text prefixed with where it came from, for the terminal.
std::string linesAbout(const std::string& where, const std::string& what, const std::string& text) {
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    out += where + ": " + what + text.substr(begin, end - begin) + "\n";
    begin = end + 1;
  }
  return out;
}

}  // namespace

int64_t stepsLost(const LoadedTrace& loaded) {
  if (!loaded.stepsTrained) return 0;
  const auto& rec = loaded.recording;
  int64_t held = 0;
  if (rec.ranks() > 0) {
    const RankTimeline& first = rec.rank(firstRecordedRank(rec));
    held = first.folded.steps + static_cast<int64_t>(first.steps.size());
  }
  return std::max<int64_t>(0, *loaded.stepsTrained - held);
}

std::string incompleteRecordingText(const LoadedTrace& loaded) {
  const std::string dropped = droppedEventsText(loaded.recording);
  const int64_t lost = stepsLost(loaded);
  if (dropped.empty() && lost == 0) return "";
  std::string text;
  if (loaded.stepsTrained) {
    text = "the run trained " + std::to_string(*loaded.stepsTrained) + " steps";
    if (lost > 0) text += ", and the trace lost " + std::to_string(lost) + " of them";
  }
  if (!dropped.empty()) text += (text.empty() ? "" : "; ") + dropped + ": their buffers were full";
  return text;
}

std::string loaderNotes(const std::string& where, const LoadedTrace& loaded) {
  std::string ended;
  if (loaded.runStatus == RunStatus::Failed) ended = "the run failed";
  if (loaded.runStatus == RunStatus::Interrupted) ended = "the run was interrupted";
  if (!ended.empty() && !loaded.runError.empty()) ended += ": " + loaded.runError;
  return linesAbout(where, "", loaded.note) + linesAbout(where, "clocks: ", loaded.clocks) +
         linesAbout(where, "", ended) + linesAbout(where, "", failedCollectivesText(loaded.recording)) +
         linesAbout(where, "recording incomplete: ", incompleteRecordingText(loaded));
}

bool looksLikeChromeTrace(const std::string& path) {
  std::string error;
  const auto head = files::readFileText(path, error, files::kTraceHeadBytes, /*prefix=*/4096);
  return head && head->find("\"traceEvents\"") != std::string::npos;
}

}  // namespace shardscope::trace
