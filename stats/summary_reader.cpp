#include "stats/summary_reader.h"

#include <map>

#include <cmath>
#include <iterator>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "files/user_json.h"
#include "trace/ring_schedule.h"

namespace shardscope::stats {

namespace {

// A number, or `fallback` where the key is missing or null (a figure that was not measured).
double numberOr(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// One of a rank's objects that may be absent (after_step_bytes before summary/2) or null (not
// recorded, /3): an empty one then.
nlohmann::json objectAt(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  return it != r.end() && it->is_object() ? *it : nlohmann::json::object();
}

// A rank's memory: each role's peak and the total's, the split at the peak and after the last
// step, and (--offload cpu) the host's peak.
void readRankMemory(const nlohmann::json& r, RankStats& s) {
  // A summary of a job whose trace held no memory events has null memory but recorded the rest.
  s.memoryRecorded = !(r.contains("peak_bytes") && r["peak_bytes"].is_null() && r.contains("collectives") &&
                       r["collectives"].is_object());
  const auto peak = objectAt(r, "peak_bytes");
  const auto atPeak = objectAt(r, "at_peak_bytes");
  const auto afterStep = objectAt(r, "after_step_bytes");
  for (int i = 0; i < trace::kMemoryRoleCount; ++i) {
    const char* role = trace::memoryRoleName(static_cast<trace::MemoryRole>(i));
    s.peakByRole[i] = peak.value(role, int64_t{0});
    s.atPeakTotal[i] = atPeak.value(role, int64_t{0});
    s.afterLastStep[i] = afterStep.value(role, int64_t{0});
  }
  s.peakTotal = peak.value("total", int64_t{0});
  s.peakDevice = peak.value("device_total", s.peakTotal);
  const auto peakHost = objectAt(r, "peak_host_bytes");
  for (int i = 0; i < trace::kTensorRoleCount; ++i) {
    s.peakHostByRole[i] = peakHost.value(trace::memoryRoleName(static_cast<trace::MemoryRole>(i)), int64_t{0});
  }
  s.peakHost = peakHost.value("total", int64_t{0});
}

void readRankThroughput(const nlohmann::json& r, RankStats& s) {
  const auto& tp = r.value("throughput", nlohmann::json::object());
  s.throughputKnown = !tp.contains("samples_per_s") || tp["samples_per_s"].is_number();
  s.samplesPerSecond = numberOr(tp, "samples_per_s", 0.0);
  s.tokensPerSecond = numberOr(tp, "tokens_per_s", 0.0);
  s.modelFlopsPerSecond = numberOr(tp, "model_flops_per_s", 0.0);
  s.mfu = tp.contains("mfu") && tp["mfu"].is_number() ? tp["mfu"].get<double>() : 0.0;  // summary/4, with a peak
}

// Each collective op's count, size, time and traffic; then what each process group carried.
void readRankCollectives(const nlohmann::json& r, const config::RunConfig& config, RankStats& s) {
  const auto coll = objectAt(r, "collectives");
  for (int op = 0; op < trace::kCollectiveOpCount; ++op) {
    const auto& c = coll.value(trace::collectiveOpName(static_cast<trace::CollectiveOp>(op)), nlohmann::json::object());
    auto& t = s.collectives[op];
    t.count = c.value("count", int64_t{0});
    // Collectives whose trace recorded no size (kernels known by their names alone): where all
    // were, the byte figures are left out (a null from a summary in between says the same).
    const bool nullSize = c.contains("bytes") && c["bytes"].is_null();
    t.unsized = nullSize ? t.count : static_cast<int64_t>(numberOr(c, "unsized_count", 0.0));
    t.sizeBytes = static_cast<int64_t>(numberOr(c, "bytes", 0.0));
    t.seconds = c.value("time_s", 0.0);
    // Before summary/4 only the size was written: the ring's traffic follows from it, with every
    // collective among the whole world (the only group those versions had).
    const auto ring = trace::ringTrafficPerRank(static_cast<trace::CollectiveOp>(op), config.world, t.sizeBytes);
    const auto traffic = [&](const char* key, int64_t older) {
      return c.contains(key) ? static_cast<int64_t>(numberOr(c, key, 0.0)) : older;
    };
    t.sentBytes = traffic("sent_bytes", ring.sentBytes);
    t.receivedBytes = traffic("received_bytes", ring.receivedBytes);
  }
  // What each process group carried, per recorded step; before HSDP every collective was the world's.
  const auto traffic = objectAt(r, "traffic_per_step");
  const auto byGroup = traffic.value("sent_bytes_by_group", nlohmann::json());
  if (byGroup.is_object()) {
    for (int g = 0; g < trace::kProcessGroupCount; ++g) {
      const auto perStep = numberOr(byGroup, trace::processGroupName(static_cast<trace::ProcessGroup>(g)), 0.0);
      s.sentBytesByGroup[g] = static_cast<int64_t>(std::llround(perStep * s.recordedSteps));
    }
  } else {
    s.sentBytesByGroup[static_cast<int>(trace::ProcessGroup::World)] = allCollectives(s.collectives).sentBytes;
  }
}

// What a rank's step spent beside its compute: communication not hidden, recomputation, the
// activations saved for backward.
void readRankOverlap(const nlohmann::json& r, RankStats& s) {
  if (r.contains("exposed_comm_s") && r["exposed_comm_s"].is_array()) {  // summary/4
    s.exposedCommSeconds = r["exposed_comm_s"].get<std::vector<double>>();
    s.steadyExposedCommSeconds = numberOr(r, "steady_exposed_comm_s", 0.0);
  }
  s.overlapPercent = r.contains("overlap_pct") && r["overlap_pct"].is_number() ? r["overlap_pct"].get<double>() : 0.0;
  s.recomputeSecondsPerStep = r.contains("recompute_s_per_step") && r["recompute_s_per_step"].is_number()
                                  ? r["recompute_s_per_step"].get<double>()
                                  : 0.0;  // absent before activation checkpointing existed
  s.activationSavedBytes = r.contains("activation_saved_bytes") && r["activation_saved_bytes"].is_number()
                               ? r["activation_saved_bytes"].get<int64_t>()
                               : 0;  // absent before summary/4
}

// Under --pp: the rank's stages and what its schedule measured (absent before pipelines, null for
// a run without one; a figure null where nothing was measured reads as 0).
void readRankPipeline(const nlohmann::json& r, RankStats& s) {
  if (!r.contains("pipeline") || !r["pipeline"].is_object()) return;
  const auto& p = r["pipeline"];
  for (const auto& stage : p.value("stages", nlohmann::json::array())) {
    if (stage.is_number_integer()) s.pipelineStages.push_back(stage.get<int>());
  }
  s.bubbleSecondsPerStep = numberOr(p, "bubble_s_per_step", 0.0);
  s.bubbleShare = numberOr(p, "bubble_share", 0.0);
  s.peakMicroBatchesInFlight = static_cast<int>(numberOr(p, "microbatches_in_flight_peak", 0.0));
  if (p.contains("activation_bytes_by_microbatch") && p["activation_bytes_by_microbatch"].is_array()) {
    for (const auto& bytes : p["activation_bytes_by_microbatch"])
      s.activationBytesByMicroBatch.push_back(bytes.is_number() ? bytes.get<double>() : 0.0);
  }
  s.plannedBubbleSecondsPerStep = numberOr(p, "planned_bubble_s_per_step", 0.0);
  s.plannedBubbleShare = numberOr(p, "planned_bubble_share", 0.0);
}

// A PyTorch job's collectives run outside c10d, by their op's name (absent before they were read).
void readOutsideC10d(const nlohmann::json& r, RankStats& s) {
  if (!r.contains("collectives_outside_c10d") || !r["collectives_outside_c10d"].is_object()) return;
  for (const auto& [name, c] : r["collectives_outside_c10d"].items()) {
    if (!c.is_object()) continue;
    auto& totals = s.outsideC10d[name];
    totals.count = static_cast<int64_t>(numberOr(c, "count", 0.0));
    const bool unsized = c.contains("size_bytes") && c["size_bytes"].is_null();
    totals.unsized = unsized ? totals.count : static_cast<int64_t>(numberOr(c, "unsized_count", 0.0));
    totals.sizeBytes = static_cast<int64_t>(numberOr(c, "size_bytes", 0.0));
    totals.seconds = numberOr(c, "time_s", 0.0);
  }
}

// One entry of a summary's "ranks"; `config`, the run's, says what older summaries did not write.
RankStats readRank(const nlohmann::json& r, const config::RunConfig& config) {
  RankStats s;
  s.rank = r.value("rank", 0);
  s.stepSeconds = r.value("step_time_s", std::vector<double>{});
  s.steadyStepSeconds = numberOr(r, "steady_step_time_s", 0.0);  // null: no step completed
  // Before summary/3 the count is not written; the config's --recording gives it.
  s.recorded =
      config.recording != config::RecordingMode::Off && !(r.contains("collectives") && r["collectives"].is_null());
  s.recordedSteps =
      r.value("recorded_steps", recordedStepsOf(config.recording, static_cast<int>(s.stepSeconds.size())));
  readRankMemory(r, s);
  readRankThroughput(r, s);
  readRankCollectives(r, config, s);
  readRankOverlap(r, s);
  readRankPipeline(r, s);
  readOutsideC10d(r, s);
  s.droppedEvents = r.value("dropped_events", int64_t{0});
  return s;
}

SummaryRun readRun(const nlohmann::json& j) {
  SummaryRun run;
  run.source = j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : "";
  run.title = j.contains("title") && j["title"].is_string() ? j["title"].get<std::string>() : "";
  if (j.contains("config")) (void)config::applyConfigJson(j["config"], run.config);
  run.status = j.value("status", "");
  run.error = j.value("error", "");
  run.device = j.value("device", "");
  for (const auto& s : j.value("steps", nlohmann::json::array())) {
    if (s.is_object() && s.contains("loss") && s["loss"].is_null()) continue;  // a job that records no loss
    run.losses.push_back(s.value("loss", 0.0));
  }
  for (const auto& r : j.value("ranks", nlohmann::json::array())) run.ranks.push_back(readRank(r, run.config));
  return run;
}

}  // namespace

namespace {

// The kind each key of a summary holds (run_summary.cpp writes them), for naming the field a
// malformed summary has wrong. Null is allowed anywhere: a figure not measured is null.
char expectedKind(const std::string& key) {
  static const std::map<std::string, char> kinds = {{"steps", 'a'},
                                                    {"ranks", 'a'},
                                                    {"step_time_s", 'a'},
                                                    {"exposed_comm_s", 'a'},
                                                    {"output_errors", 'a'},
                                                    {"clocks", 'a'},
                                                    {"config", 'o'},
                                                    {"mesh", 'o'},
                                                    {"runs", 'o'},
                                                    {"throughput", 'o'},
                                                    {"collectives", 'o'},
                                                    {"traffic_per_step", 'o'},
                                                    {"peak_bytes", 'o'},
                                                    {"at_peak_bytes", 'o'},
                                                    {"after_step_bytes", 'o'},
                                                    {"peak_host_bytes", 'o'},
                                                    {"sent_bytes_by_group", 'o'},
                                                    {"schema", 's'},
                                                    {"status", 's'},
                                                    {"error", 's'},
                                                    {"device", 's'},
                                                    {"placement", 's'},
                                                    {"zero_stage", 's'},
                                                    {"source", 's'},
                                                    {"title", 's'},
                                                    {"schedule", 's'},
                                                    {"mfu_peak", 's'},
                                                    {"host", 's'},
                                                    {"shifted", 'b'},
                                                    {"measured", 'b'}};
  const auto it = kinds.find(key);
  return it == kinds.end() ? 'n' : it->second;  // the rest are numbers
}

// The first field, depth first, whose value is of another kind than its key holds, as
// `ranks[0].step_time_s is a string where an array belongs`; "" when none is. A compare's runs
// are summaries each; a config is read by its own checks.
std::string wrongKindInSummary(const nlohmann::json& j, const std::string& path) {
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (auto found = wrongKindInSummary(j[i], path + "[" + std::to_string(i) + "]"); !found.empty()) return found;
    }
    return "";
  }
  if (!j.is_object()) return "";
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string at = path.empty() ? it.key() : path + "." + it.key();
    const auto& v = it.value();
    // A compare's runs are summaries, and a rank's collectives are one object per op.
    const bool ofObjects =
        path == "runs" || (path.size() >= 11 && path.compare(path.size() - 11, 11, "collectives") == 0);
    const char kind = ofObjects ? 'o' : expectedKind(it.key());
    const bool fits = v.is_null() || (kind == 'a'   ? v.is_array()
                                      : kind == 'o' ? v.is_object()
                                      : kind == 's' ? v.is_string()
                                      : kind == 'b' ? v.is_boolean()
                                                    : v.is_number());
    if (!fits) {
      const char* wanted = kind == 'a'   ? "an array"
                           : kind == 'o' ? "an object"
                           : kind == 's' ? "a string"
                           : kind == 'b' ? "true or false"
                                         : "a number";
      return at + " is " + files::jsonKindName(v) + " where " + wanted + " belongs";
    }
    if (v.is_structured() && it.key() != "config") {
      if (auto found = wrongKindInSummary(v, at); !found.empty()) return found;
    }
  }
  return "";
}

}  // namespace

LoadedSummary loadSummary(const std::string& path) {
  LoadedSummary out;
  const auto text = files::readFileText(path, out.error, files::kMaxSummaryBytes);
  if (!text) return out;
  const auto parsed = files::parseUserJson(*text);
  if (parsed.tooDeep) {
    out.error = "'" + path + "' is not a shardscope summary: " + parsed.error + ".";
    return out;
  }
  const auto& j = parsed.value;
  const bool named = j.is_object() && j.contains("schema");
  const std::string schema = named && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
  try {
    if (schema == "shardscope.compare/1") {
      for (const auto& [strategy, run] : j["runs"].items()) out.runs.push_back(readRun(run));
    } else if (schema.rfind("shardscope.summary/", 0) == 0) {
      out.runs.push_back(readRun(j));
    } else {
      out.error =
          "'" + path + "' is not a shardscope summary or trace (written by --summary or --trace)" +
          (named ? ": its \"schema\" is " + files::shownValue(j["schema"]) +
                       ", not \"shardscope.summary/4\" (run --summary) or \"shardscope.compare/1\" (compare --summary)"
                 : std::string()) +
          ".";
    }
  } catch (const nlohmann::json::exception&) {
    const std::string field = wrongKindInSummary(j, "");
    out.error = "'" + path + "' is a malformed summary: " +
                (field.empty() ? "one of its fields holds another kind of value than shardscope writes" : field) +
                ". Write it again with run --summary, or mend that field.";
  }
  return out;
}

}  // namespace shardscope::stats
