#include "engine/launch/run_summary.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "config/pipeline_config.h"
#include "engine/launch/run_types.h"
#include "files/output_file.h"
#include "stats/hang_summary.h"
#include "stats/run_stats.h"

namespace shardscope::engine {

namespace {

// Each rank's clock against rank 0's, as the merge applied it: its first and last readings'
// offsets, the bound every reading held to, the drift between them where they differ by more
// than their bounds (null: one offset throughout).
nlohmann::json clocksJson(const std::vector<trace::RankClock>& clocks) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t r = 0; r < clocks.size(); ++r) {
    const auto& clock = clocks[r];
    if (!clock.measured()) {
      out.push_back({{"rank", r}, {"measured", false}});
      continue;
    }
    out.push_back({{"rank", r},
                   {"measured", true},
                   {"host", clock.host()},
                   {"offset_s", static_cast<double>(clock.readings().front().offsetNs) / 1e9},
                   {"last_offset_s", static_cast<double>(clock.readings().back().offsetNs) / 1e9},
                   {"uncertainty_s", static_cast<double>(clock.worstUncertaintyNs()) / 1e9},
                   {"readings", clock.readings().size()},
                   {"drift_ppm", clock.drifted() ? nlohmann::json(clock.driftPpm()) : nlohmann::json(nullptr)},
                   {"shifted", clock.shifted()}});
  }
  return out;
}

// A rank's memory figures: the peak by role, the split at the peak, after the last step, and the
// host's under --offload cpu (null when none was held).
struct RankMemoryJson {
  nlohmann::json peak, atPeak, afterStep, peakHost;
};
RankMemoryJson rankMemoryJson(const stats::RankStats& s) {
  RankMemoryJson m;
  for (int i = 0; i < trace::kMemoryRoleCount; ++i) {
    const char* role = trace::memoryRoleName(static_cast<trace::MemoryRole>(i));
    m.peak[role] = s.peakByRole[i];
    m.atPeak[role] = s.atPeakTotal[i];
    m.afterStep[role] = s.afterLastStep[i];
  }
  m.peak["total"] = s.peakTotal;
  m.peak["device_total"] = s.peakDevice;
  m.peakHost = nullptr;
  if (s.peakHost > 0) {
    m.peakHost = nlohmann::json::object();
    for (int i = 0; i < trace::kTensorRoleCount; ++i) {
      m.peakHost[trace::memoryRoleName(static_cast<trace::MemoryRole>(i))] = s.peakHostByRole[i];
    }
    m.peakHost["total"] = s.peakHost;
  }
  return m;
}

// A collective figure in bytes: null where no collective of `c` had its size recorded (kernels known
// by their names alone), not a 0 that reads as measured.
nlohmann::json bytesOrNull(const trace::CollectiveTotals& c, int64_t bytes) {
  return c.count > 0 && c.unsized == c.count ? nlohmann::json(nullptr) : nlohmann::json(bytes);
}

// Per collective op: count, size, ring traffic, time; and the traffic of one step.
nlohmann::json collectivesJson(const stats::RankStats& s) {
  nlohmann::json collectives;
  for (int op = 0; op < trace::kCollectiveOpCount; ++op) {
    const auto& c = s.collectives[op];
    // "bytes" is the size as before summary/4; the ring's sent and received bytes are new.
    nlohmann::json entry = {{"count", c.count}, {"time_s", c.seconds}};
    // Where none had a recorded size the byte figures are left out (an older reader takes 0, as it
    // did; a null would stop it), and unsized_count says why; where some had none, it says how many
    // the figures leave out.
    if (c.count == 0 || c.unsized < c.count) {
      entry["bytes"] = c.sizeBytes;
      entry["size_bytes"] = c.sizeBytes;
      entry["sent_bytes"] = c.sentBytes;
      entry["received_bytes"] = c.receivedBytes;
    }
    if (c.unsized > 0) entry["unsized_count"] = c.unsized;
    collectives[trace::collectiveOpName(static_cast<trace::CollectiveOp>(op))] = std::move(entry);
  }
  return collectives;
}

// A PyTorch job's collectives run outside c10d, by their op's name (also counted in "collectives").
nlohmann::json outsideC10dJson(const stats::RankStats& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, c] : s.outsideC10d) {
    out[name] = {{"count", c.count}, {"size_bytes", bytesOrNull(c, c.sizeBytes)}, {"time_s", c.seconds}};
    if (c.unsized > 0 && c.unsized < c.count) out[name]["unsized_count"] = c.unsized;
  }
  return out;
}

nlohmann::json trafficPerStepJson(const stats::RankStats& s) {
  const auto all = trace::allCollectives(s.collectives);
  const double perStep = 1.0 / std::max(s.recordedSteps, 1);
  nlohmann::json sentByGroup;
  for (int g = 0; g < trace::kProcessGroupCount; ++g) {
    sentByGroup[trace::processGroupName(static_cast<trace::ProcessGroup>(g))] = s.sentBytesByGroup[g] * perStep;
  }
  const auto perStepOrNull = [&](int64_t bytes) {
    const auto figure = bytesOrNull(all, bytes);
    return figure.is_null() ? figure : nlohmann::json(static_cast<double>(bytes) * perStep);
  };
  nlohmann::json out = {{"schedule", "ring"},
                        {"size_bytes", perStepOrNull(all.sizeBytes)},
                        {"sent_bytes", perStepOrNull(all.sentBytes)},
                        {"received_bytes", perStepOrNull(all.receivedBytes)}};
  // Where no collective had a recorded size, what each group carried is not known either: left out
  // (an older reader then takes the world's, 0).
  if (!(all.count > 0 && all.unsized == all.count)) out["sent_bytes_by_group"] = sentByGroup;
  if (all.unsized > 0) out["unsized_count"] = all.unsized;  // collectives whose size no trace recorded
  return out;
}

// The collectives the backend failed on the rank (their timeout passed, a peer went away): each
// with how long it was in flight, from its issue until the rank saw it fail. None ended.
nlohmann::json failedCollectivesJson(const stats::RankStats& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : s.failedCollectives) {
    out.push_back({{"op", trace::collectiveOpName(static_cast<trace::CollectiveOp>(e.op))},
                   {"unit", trace::collectiveUnit(e)},
                   {"process_group", trace::processGroupName(static_cast<trace::ProcessGroup>(e.processGroup))},
                   {"step", e.step},
                   {"size_bytes", trace::collectiveSizeBytes(e)},
                   {"in_flight_s", static_cast<double>(e.beginNs - e.issueNs) / 1e9}});
  }
  return out;
}

// Under --pp: the rank's stages, its bubble measured, and the most micro-batches it held activations
// of (stats/pipeline_stats.h); null without --pp.
nlohmann::json pipelineRankJson(const stats::RankStats& s) {
  if (s.pipelineStages.empty()) return nullptr;
  const bool measured = s.recorded && s.recordedSteps > 0;
  const auto ifMeasured = [&](nlohmann::json value) { return measured ? value : nlohmann::json(nullptr); };
  return {{"stages", s.pipelineStages},
          {"bubble_s_per_step", ifMeasured(s.bubbleSecondsPerStep)},
          {"bubble_share", ifMeasured(s.bubbleShare)},
          {"microbatches_in_flight_peak", ifMeasured(s.peakMicroBatchesInFlight)},
          // Allocator accounting per micro-batch: what each one's forwards left held on the rank.
          {"activation_bytes_by_microbatch",
           measured && s.memoryRecorded ? nlohmann::json(s.activationBytesByMicroBatch) : nlohmann::json(nullptr)},
          // The plan laid out with the run's mean F, B, I and W times, no waiting: not a measurement.
          {"planned_bubble_s_per_step", ifMeasured(s.plannedBubbleSecondsPerStep)},
          {"planned_bubble_share", ifMeasured(s.plannedBubbleShare)}};
}

// The run's pipeline and its bubble as the schedule's closed form predicts it; null without --pp.
nlohmann::json pipelineJson(const config::RunConfig& config) {
  if (config.pp < 2) return nullptr;
  const auto shape = config::pipelineShapeOf(config);
  const auto form = config::bubbleClosedForm(shape);
  return {{"schedule", config::modeName(shape.schedule)},
          {"ranks", shape.ranks},
          {"stages_per_rank", shape.stagesPerRank},
          {"microbatches", shape.microBatches},
          {"data_parallel", config::dataRankCount(config)},
          // A prediction: the bubble over the ideal time (no bubble), by the schedule's closed form.
          {"predicted_bubble_over_ideal", form.fraction},
          {"predicted_bubble_form", form.form}};
}

nlohmann::json rankJson(const stats::RankStats& s, const RunResult& result, const stats::DeviceLimits& limits) {
  const auto [peak, atPeak, afterStep, peakHost] = rankMemoryJson(s);
  const nlohmann::json collectives = collectivesJson(s);
  const nlohmann::json trafficPerStep = trafficPerStepJson(s);
  // With --recording off nothing was measured: null, not a zero that reads as a measurement.
  const bool recorded = s.recorded;
  const auto ifRecorded = [&](nlohmann::json value) { return recorded ? value : nlohmann::json(nullptr); };
  const auto ifMemory = [&](nlohmann::json value) {
    return recorded && s.memoryRecorded ? value : nlohmann::json(nullptr);
  };
  // Throughput follows from step times: none without a completed step (a run stopped in its first).
  const bool stepTimed = !s.stepSeconds.empty();
  const auto ifKnown = [&](double value) {
    return s.throughputKnown && stepTimed ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  // Per-step figures need a recorded step: CUDA memory snapshots on their own have none, and a
  // run can stop in its first. What forward saved is measured when backward begins.
  const bool stepRecorded = recorded && s.recordedSteps > 0;
  const auto ifStep = [&](nlohmann::json value) { return stepRecorded ? value : nlohmann::json(nullptr); };
  const bool savedKnown = recorded && s.memoryRecorded && (stepRecorded || s.activationSavedBytes > 0);
  const bool placed = s.rank < static_cast<int>(result.rankPlacements.size()) && !result.rankPlacements[s.rank].empty();
  return {{"rank", s.rank},
          {"placement", placed ? nlohmann::json(result.rankPlacements[s.rank]) : nlohmann::json(nullptr)},
          {"step_time_s", s.stepSeconds},
          {"steady_step_time_s", stepTimed ? nlohmann::json(s.steadyStepSeconds) : nlohmann::json(nullptr)},
          {"recorded_steps", s.recordedSteps},
          {"peak_bytes", ifMemory(peak)},
          {"at_peak_bytes", ifMemory(atPeak)},
          {"peak_host_bytes", ifMemory(peakHost)},
          {"after_step_bytes", ifMemory(afterStep)},
          {"throughput",
           {{"samples_per_s", ifKnown(s.samplesPerSecond)},
            {"tokens_per_s", ifKnown(s.tokensPerSecond)},
            {"model_flops_per_s", ifKnown(s.modelFlopsPerSecond)},
            {"mfu", limits.peakFlops > 0 && stepTimed ? nlohmann::json(s.mfu) : nlohmann::json(nullptr)}}},
          {"collectives", ifRecorded(collectives)},
          {"collectives_outside_c10d", ifRecorded(outsideC10dJson(s))},
          {"traffic_per_step", ifStep(trafficPerStep)},
          {"overlap_pct", ifStep(s.overlapPercent)},
          {"exposed_comm_s", ifRecorded(s.exposedCommSeconds)},
          {"steady_exposed_comm_s", ifStep(s.steadyExposedCommSeconds)},
          {"recompute_s_per_step", ifStep(s.recomputeSecondsPerStep)},
          {"activation_saved_bytes", savedKnown ? nlohmann::json(s.activationSavedBytes) : nlohmann::json(nullptr)},
          {"pipeline", pipelineRankJson(s)},
          {"dropped_events", s.droppedEvents},
          {"failed_collectives", failedCollectivesJson(s)},
          // Who made the others wait (stats/stragglers.h): null where no collective was recorded.
          {"last_arrivals", ifRecorded(s.lastArrivals)},
          {"last_arrival_share", ifRecorded(s.groupCollectives > 0 ? nlohmann::json(s.lastArrivalShare) : nullptr)},
          {"wait_caused_s", ifRecorded(s.waitCausedSeconds)}};
}

}  // namespace

trace::RunStatus runStatusOf(const RunResult& result, const trace::RunRecording& recording) {
  if (!result.ok) return result.stopped ? trace::RunStatus::Interrupted : trace::RunStatus::Failed;
  const bool lost = trace::droppedEvents(recording) > 0 || stepsLostOf(result) > 0;
  return lost ? trace::RunStatus::Incomplete : trace::RunStatus::Ok;
}

int64_t stepsLostOf(const RunResult& result) {
  if (!result.stepsTrained) return 0;
  return std::max<int64_t>(0, *result.stepsTrained - static_cast<int64_t>(result.losses.size()));
}

nlohmann::json summaryJson(const config::RunConfig& config, const RunResult& result,
                           const trace::RunRecording& recording) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t s = 0; s < result.losses.size(); ++s) {
    steps.push_back({{"step", s}, {"loss", result.losses[s]}});
  }
  nlohmann::json ranks = nlohmann::json::array();
  const auto limits = stats::deviceLimitsOf(config, result.device);
  for (const auto& s : stats::computeRankStats(config, recording, result.parameterCount, result.device)) {
    ranks.push_back(rankJson(s, result, limits));
    // Not traced is not empty: a rank no file was given for says so, beside its null figures.
    if (std::find(result.untracedRanks.begin(), result.untracedRanks.end(), s.rank) != result.untracedRanks.end()) {
      ranks.back()["traced"] = false;
    }
  }
  nlohmann::json j = {{"schema", "shardscope.summary/4"},
                      // "incomplete": the run finished, and its recording lost events (full buffers)
                      // or, read back from a trace, steps it trained.
                      {"status", trace::runStatusName(runStatusOf(result, recording))},
                      {"config", config.toJson()},
                      {"zero_stage", config::zeroName(config.strategy)},
                      {"device", result.deviceDescription},
                      // How the controller started the rank processes (engine/launch/rank_fork.h).
                      {"rank_processes", result.ranksForked ? "forked" : "exec"},
                      {"parameter_count", result.parameterCount},
                      {"device_memory_bytes", result.device.memoryBytes},
                      {"measured_peak_flops", result.device.peakFlops},
                      {"mfu_peak", limits.peakFlops > 0 ? nlohmann::json(limits.peakNote) : nlohmann::json(nullptr)},
                      {"world_size", result.worldSize},
                      // The (replicate, shard) mesh: S ranks share each shard, R replicas of it; under
                      // --tp each of its places a tensor group of that many ranks.
                      {"mesh",
                       {{"shard_group_size", config::shardGroupSize(config)},
                        {"replicas", config::replicaCount(config)},
                        {"tensor_parallel", config.tp},
                        {"pipeline_parallel", config.pp}}},
                      {"pipeline", pipelineJson(config)},
                      {"steps", steps},
                      // A reopened trace's "steps" are those it holds: the run may have trained more.
                      {"steps_trained", result.stepsTrained ? nlohmann::json(*result.stepsTrained) : nullptr},
                      {"steps_lost", result.stepsTrained ? nlohmann::json(stepsLostOf(result)) : nullptr},
                      {"ranks", ranks},
                      {"out_of_order_events", result.outOfOrderEvents},
                      {"controller_catch_up_s", result.controllerCatchUpSeconds},
                      {"controller_cpu_s", result.controllerCpuSeconds ? nlohmann::json(*result.controllerCpuSeconds)
                                                                       : nlohmann::json(nullptr)}};
  if (!result.ok) j["error"] = result.error;
  // Where a stalled or failed run's ranks stopped: as view --summary writes Flight Recorder's.
  if (result.lastCollectives)
    j["last_collectives"] = stats::hangSummaryJson(*result.lastCollectives)["flight_recorder"];
  if (!result.outputErrors.empty()) j["output_errors"] = result.outputErrors;
  if (!result.clocks.empty()) j["clocks"] = clocksJson(result.clocks);
  if (!result.source.empty()) {
    // A PyTorch job's own records: only its world is known; the rest would be shardscope's
    // defaults, written as if they were the job's.
    j["source"] = result.source;
    if (!result.title.empty()) j["title"] = result.title;
    j["config"] = {{"world", result.worldSize}};
    for (const char* unknown :
         {"zero_stage", "parameter_count", "device_memory_bytes", "measured_peak_flops", "mesh"}) {
      j[unknown] = nullptr;
    }
  }
  return j;
}

std::optional<std::string> writeSummaryFile(const std::string& path, const config::RunConfig& config,
                                            const RunResult& result, const trace::RunRecording& recording) {
  const std::string text = summaryJson(config, result, recording).dump(2);
  return files::writeOutputFile(path, [&](std::ostream& out) { out << text << "\n"; });
}

}  // namespace shardscope::engine
