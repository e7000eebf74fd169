#include "trace/chrome_trace.h"

#include <cmath>
#include <map>
#include <optional>

#include "trace/ring_schedule.h"

namespace shardscope::trace {

namespace {

double micros(int64_t ns, int64_t origin) { return static_cast<double>(ns - origin) / 1e3; }

// A collective the backend failed: an instant where the rank saw it fail, with what it was to move
// and when it was issued.
nlohmann::json failedCollectiveJson(int r, const Event& e, int64_t origin) {
  const auto op = static_cast<CollectiveOp>(e.op);
  nlohmann::json args = {{"op", collectiveOpName(op)},
                         {"bytes", e.bytes},
                         {"bytes_out", e.bytesOut},
                         {"unit", collectiveUnit(e)},
                         {"implementation", collectiveImplementation(e)},
                         {"phase", phaseName(static_cast<Phase>(e.phase))},
                         {"group_size", e.worldSize},
                         {"process_group", processGroupName(static_cast<ProcessGroup>(e.processGroup))},
                         {"step", e.step},
                         {"issue_us", micros(e.issueNs, origin)}};
  if (e.microBatch != 0) args["micro_batch"] = e.microBatch;
  if (op == CollectiveOp::AllToAll && e.ownPartBytes >= 0) args["own_part_bytes"] = e.ownPartBytes;
  if (isPointToPoint(op) && e.peer >= 0) args["peer"] = e.peer;
  return {{"ph", "i"},
          {"s", "t"},
          {"cat", kFailedCollectiveCategory},
          {"pid", r},
          {"tid", 2},
          {"name", collectiveSpanName(e) + " failed"},
          {"ts", micros(e.beginNs, origin)},
          {"args", args}};
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::ostream& out, const nlohmann::json& metadata, int ranks) : out_(out) {
  // Streamed event by event: a long run has millions of them.
  out_ << "{\"displayTimeUnit\":\"ms\",\"otherData\":" << metadata.dump() << ",\"traceEvents\":[\n";
  for (int r = 0; r < ranks; ++r) {
    emit({{"ph", "M"}, {"pid", r}, {"name", "process_name"}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    emit({{"ph", "M"}, {"pid", r}, {"name", "process_sort_index"}, {"args", {{"sort_index", r}}}});
    emit({{"ph", "M"}, {"pid", r}, {"tid", 1}, {"name", "thread_name"}, {"args", {{"name", "compute"}}}});
    emit({{"ph", "M"}, {"pid", r}, {"tid", 2}, {"name", "thread_name"}, {"args", {{"name", "comm"}}}});
    emit({{"ph", "M"}, {"pid", r}, {"tid", 3}, {"name", "thread_name"}, {"args", {{"name", "event groups"}}}});
  }
}

void ChromeTraceWriter::emit(const nlohmann::json& event) {
  out_ << (first_ ? "" : ",\n") << event.dump();
  first_ = false;
}

void ChromeTraceWriter::finish(const RunFacts& facts) {
  out_ << "\n],\"" << kRunFactsKey << "\":" << runFactsJson(facts).dump() << "}\n";
}

nlohmann::json runFactsJson(const RunFacts& facts) {
  nlohmann::json j = {{"parameter_count", facts.parameterCount},
                      {"device_memory_bytes", facts.deviceMemoryBytes},
                      {"measured_peak_flops", facts.measuredPeakFlops},
                      {"rank_placements", facts.rankPlacements}};
  // How the run ended, where the writer knows (the app's export does not): what view reports.
  if (facts.status != RunStatus::Unknown) j["status"] = runStatusName(facts.status);
  if (!facts.error.empty()) j["error"] = facts.error;
  if (facts.stepsTrained) j["steps_trained"] = *facts.stepsTrained;
  if (!facts.droppedEvents.empty()) j["dropped_events"] = facts.droppedEvents;
  return j;
}

namespace {

// A count a hand-edited file may hold anything in: a whole number from 0 below 1e18, or none.
std::optional<int64_t> countOf(const nlohmann::json& value) {
  if (!value.is_number()) return std::nullopt;
  const double count = value.get<double>();
  if (!(count >= 0 && count < 1e18) || count != std::floor(count)) return std::nullopt;
  return static_cast<int64_t>(count);
}

// The run's end (status, error, steps trained, drops per rank): absent in a trace from before it was kept.
void readRunEnd(const nlohmann::json& json, RunFacts& facts) {
  if (const auto it = json.find("status"); it != json.end() && it->is_string()) {
    facts.status = runStatusOfName(it->get<std::string>());
  }
  if (const auto it = json.find("error"); it != json.end() && it->is_string()) facts.error = it->get<std::string>();
  if (const auto it = json.find("steps_trained"); it != json.end()) facts.stepsTrained = countOf(*it);
  if (const auto it = json.find("dropped_events"); it != json.end() && it->is_array()) {
    for (const auto& dropped : *it) {
      if (facts.droppedEvents.size() == static_cast<size_t>(kMaxRanks)) break;
      facts.droppedEvents.push_back(countOf(dropped).value_or(0));
    }
  }
}

}  // namespace

RunFacts runFactsOf(const nlohmann::json& json) {
  RunFacts facts;
  if (!json.is_object()) return facts;
  // Positive and below 1e18 (a cast to int64 of more is undefined), else 0: a hand-edited file
  // may hold anything.
  auto number = [&](const char* key) {
    const auto it = json.find(key);
    const double value = it != json.end() && it->is_number() ? it->get<double>() : 0.0;
    return value > 0 && value < 1e18 ? value : 0.0;
  };
  facts.parameterCount = static_cast<int64_t>(number("parameter_count"));
  facts.deviceMemoryBytes = static_cast<int64_t>(number("device_memory_bytes"));
  facts.measuredPeakFlops = number("measured_peak_flops");
  if (const auto it = json.find("rank_placements"); it != json.end() && it->is_array()) {
    for (const auto& placement : *it) {
      if (facts.rankPlacements.size() == static_cast<size_t>(kMaxRanks)) break;
      facts.rankPlacements.push_back(placement.is_string() ? placement.get<std::string>() : "");
    }
  }
  readRunEnd(json, facts);
  return facts;
}

void writeChromeTrace(std::ostream& out, const RunRecording& rec, const nlohmann::json& metadata,
                      const RunFacts& facts) {
  const int64_t origin = rec.originNs() == INT64_MAX ? 0 : rec.originNs();
  ChromeTraceWriter writer(out, metadata, rec.ranks());
  for (int r = 0; r < rec.ranks(); ++r) writer.write(r, rec.rank(r), origin);
  writer.finish(facts);
}

void ChromeTraceWriter::write(int rank, const RankTimeline& detail, int64_t originNs) {
  writeCompute(rank, detail, originNs);
  writeCollectives(rank, detail, originNs);
  for (const auto& failed : detail.failedCollectives) emit(failedCollectiveJson(rank, failed, originNs));
  writeGroups(rank, detail, originNs);
  writeMemory(rank, detail, originNs);
}

void ChromeTraceWriter::writeCompute(int r, const RankTimeline& t, int64_t origin) {
  const auto stepEnds = stepEndsByStep(t);
  for (const auto& e : t.compute) {
    nlohmann::json args = {{"kind", computeKindName(static_cast<ComputeKind>(e.op))},
                           {"unit", e.text()},
                           {"phase", phaseName(static_cast<Phase>(e.phase))},
                           {"step", e.step}};
    if (e.microBatch != 0) args["micro_batch"] = e.microBatch;
    const auto end = stepEnds.find(e.step);
    if (static_cast<ComputeKind>(e.op) == ComputeKind::Step && end != stepEnds.end()) {
      if (end->second->pausedNs > 0) args["paused_us"] = end->second->pausedNs / 1e3;
      // The step as the rank timed it, from before its batch to after its loss's all-reduce: the
      // step time a reader gives back (the span is the training step's compute alone).
      args["step_begin_us"] = micros(end->second->beginNs, origin);
      args["step_end_us"] = micros(end->second->endNs, origin);
      // A diverged run's NaN would be JSON's null, which no reader takes for a number: left out.
      if (std::isfinite(end->second->loss)) args["loss"] = end->second->loss;
    }
    emit({{"ph", "X"},
          {"cat", "compute"},
          {"pid", r},
          {"tid", 1},
          {"name", computeSpanName(e)},
          {"ts", micros(e.beginNs, origin)},
          {"dur", (e.endNs - e.beginNs) / 1e3},
          {"args", args}});
  }
}

void ChromeTraceWriter::writeCollectives(int r, const RankTimeline& t, int64_t origin) {
  for (const auto& e : t.collectives) {
    const auto op = static_cast<CollectiveOp>(e.op);
    const double seconds = (e.endNs - e.beginNs) / 1e9;
    const double algbw = algbwBytesPerSecond(collectiveSizeBytes(e), seconds);
    const std::string unit = collectiveUnit(e);
    const std::string impl = collectiveImplementation(e);
    const auto ring = collectiveTraffic(e);
    nlohmann::json args = {{"op", collectiveOpName(op)},
                           {"bytes", e.bytes},
                           {"bytes_out", e.bytesOut},
                           {"unit", unit},
                           {"phase", phaseName(static_cast<Phase>(e.phase))},
                           {"group_size", e.worldSize},
                           {"step", e.step},
                           {"issue_us", micros(e.issueNs, origin)},
                           {"algbw_GBps", algbw / 1e9},
                           {"busbw_GBps", algbw * busbwFactor(op, e.worldSize) / 1e9},
                           {"size_bytes", collectiveSizeBytes(e)},
                           {"ring_sent_bytes", ring.sentBytes},
                           {"ring_received_bytes", ring.receivedBytes},
                           {"implementation", impl}};
    if (e.microBatch != 0) args["micro_batch"] = e.microBatch;
    if (op == CollectiveOp::AllToAll && e.ownPartBytes >= 0) args["own_part_bytes"] = e.ownPartBytes;  // what it keeps
    if (isPointToPoint(op) && e.peer >= 0) args["peer"] = e.peer;
    if (e.sizeUnknown) {  // its bytes 0 are no measurement: no figure that follows from them either
      args["size_unknown"] = 1;
      for (const char* key : {"size_bytes", "ring_sent_bytes", "ring_received_bytes", "algbw_GBps", "busbw_GBps"})
        args.erase(key);
    }
    const auto group = static_cast<ProcessGroup>(e.processGroup);
    args["process_group"] = processGroupName(group);
    // Under HSDP the same unit is reduced twice, in two groups: the name says which.
    emit({{"ph", "X"},
          {"cat", "comm"},
          {"pid", r},
          {"tid", 2},
          {"name", collectiveSpanName(e)},
          {"ts", micros(e.beginNs, origin)},
          {"dur", (e.endNs - e.beginNs) / 1e3},
          {"args", args}});
  }
}

void ChromeTraceWriter::writeGroups(int r, const RankTimeline& t, int64_t origin) {
  for (const auto& g : t.groups) {
    // Unpaused groups are instants; a pause at the step gate is a slice of its own.
    nlohmann::json args = {{"kind", groupKindName(static_cast<GroupKind>(g.op))},
                           {"label", g.text()},
                           {"phase", phaseName(static_cast<Phase>(g.phase))},
                           {"step", g.step}};
    if (g.microBatch != 0) args["micro_batch"] = g.microBatch;
    if (g.endNs > g.beginNs) {
      emit({{"ph", "X"},
            {"cat", "pause"},
            {"pid", r},
            {"tid", 3},
            {"name", "paused before " + g.text()},
            {"ts", micros(g.beginNs, origin)},
            {"dur", (g.endNs - g.beginNs) / 1e3},
            {"args", args}});
    } else {
      emit({{"ph", "i"},
            {"s", "t"},
            {"cat", "group"},
            {"pid", r},
            {"tid", 3},
            {"name", g.text()},
            {"ts", micros(g.beginNs, origin)},
            {"args", args}});
    }
  }
}

void ChromeTraceWriter::writeMemory(int r, const RankTimeline& t, int64_t origin) {
  writeUnitCounters(r, kUnitMemoryCounterPrefix, t.units, origin);
  writeUnitCounters(r, kUnitHostMemoryCounterPrefix, t.host.units, origin);
  writeRoleCounter(r, "memory", t.memory, kMemoryRoleCount, origin);
  // --offload cpu: the rank's host memory, a counter of its own beside the device's.
  writeRoleCounter(r, kHostMemoryCounter, t.host.memory, kTensorRoleCount, origin);
}

// Per-unit counters ("who holds what"), named prefix + the unit, with the roles the unit ever held.
void ChromeTraceWriter::writeUnitCounters(int r, const char* prefix, const std::vector<UnitMemoryTrack>& units,
                                          int64_t origin) {
  for (const auto& track : units) {
    if (track.unit == kNoUnit) continue;
    const std::string name = prefix + unitName(track.unit);
    for (size_t k = 0; k < track.samples.size(); ++k) {
      const RoleBytes bytes = track.samples.bytes(k);
      nlohmann::json args = nlohmann::json::object();
      for (int i = 0; i < kMemoryRoleCount; ++i) {
        if (track.peakByRole[i] > 0) args[memoryRoleName(static_cast<MemoryRole>(i))] = bytes[i];
      }
      emit({{"ph", "C"}, {"pid", r}, {"name", name}, {"ts", micros(track.samples.time(k), origin)}, {"args", args}});
    }
  }
}

void ChromeTraceWriter::writeRoleCounter(int r, const char* name, const RoleTrack& track, int roles, int64_t origin) {
  for (size_t k = 0; k < track.size(); ++k) {
    const RoleBytes bytes = track.bytes(k);
    nlohmann::json args;
    for (int i = 0; i < roles; ++i) args[memoryRoleName(static_cast<MemoryRole>(i))] = bytes[i];
    emit({{"ph", "C"}, {"pid", r}, {"name", name}, {"ts", micros(track.time(k), origin)}, {"args", args}});
  }
}

void writeMemoryCsvHeader(std::ostream& out) {
  out << "rank,t_ns";
  for (int i = 0; i < kMemoryRoleCount; ++i) out << ',' << memoryRoleName(static_cast<MemoryRole>(i));
  out << ",total,space\n";
}

namespace {

void writeMemoryCsvTrack(std::ostream& out, int rank, const RoleTrack& track, const RangeMax& totals, const char* space,
                         int64_t originNs) {
  for (size_t k = 0; k < track.size(); ++k) {
    out << rank << ',' << (track.time(k) - originNs);
    for (int64_t b : track.bytes(k)) out << ',' << b;
    out << ',' << totals.value(k) << ',' << space << '\n';
  }
}

}  // namespace

void writeMemoryCsvRows(std::ostream& out, int rank, const RankTimeline& detail, int64_t originNs) {
  writeMemoryCsvTrack(out, rank, detail.memory, detail.memoryTotals, "device", originNs);
  // --offload cpu: the rank's host memory, in rows of their own after the device's.
  writeMemoryCsvTrack(out, rank, detail.host.memory, detail.host.totals, "host", originNs);
}

void writeMemoryCsv(std::ostream& out, const RunRecording& rec) {
  const int64_t origin = rec.originNs() == INT64_MAX ? 0 : rec.originNs();
  writeMemoryCsvHeader(out);
  for (int r = 0; r < rec.ranks(); ++r) writeMemoryCsvRows(out, r, rec.rank(r), origin);
}

}  // namespace shardscope::trace
