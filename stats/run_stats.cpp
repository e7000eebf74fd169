#include "stats/run_stats.h"

#include "stats/pipeline_actions.h"
#include "stats/pipeline_stats.h"
#include "stats/stragglers.h"

#include "config/model_layout.h"
#include "config/pipeline_config.h"

#include <algorithm>
#include <numeric>

namespace shardscope::stats {

// The last sample at or before the last step's end, of the device's memory or the host's.
trace::RoleBytes rolesAfterLastStep(const trace::RankTimeline& t, const trace::RoleTrack& track) {
  if (t.steps.empty()) return {};
  return track.bytesAt(static_cast<double>(t.steps.back().endNs));
}

double itemsPerRankStep(const config::RunConfig& config) {
  const double samples = static_cast<double>(config.batch) / std::max(config.world, 1);
  return config.model == config::ModelKind::Gpt ? samples * config.seq : samples;
}

double modelFlopsPerItem(const config::RunConfig& config, int64_t parameterCount) {
  // 2 FLOPs per parameter forward, 2 for the input gradients, 2 for the weight gradients; under
  // LoRA the frozen weights get no weight gradients, so only the adapters count thrice.
  const double trained = config.loraRank > 0 ? static_cast<double>(config::trainableElements(config))
                                             : static_cast<double>(parameterCount);
  return 4.0 * static_cast<double>(parameterCount) + 2.0 * trained;
}

namespace {

// The mean over the steps a run recorded (every one, or the even ones under alternate), leaving
// out the first (warm-up) when there is more than one.
double steadyMeanOfRecorded(const std::vector<double>& perStep, config::RecordingMode recording) {
  std::vector<double> recorded;
  for (size_t i = 0; i < perStep.size(); ++i) {
    if (recording == config::RecordingMode::On || (recording == config::RecordingMode::Alternate && i % 2 == 0))
      recorded.push_back(perStep[i]);
  }
  if (recorded.empty()) return 0.0;
  const size_t first = recorded.size() > 1 ? 1 : 0;
  return std::accumulate(recorded.begin() + static_cast<std::ptrdiff_t>(first), recorded.end(), 0.0) /
         static_cast<double>(recorded.size() - first);
}

// Under --pp: the stages the rank holds, from its place in the mesh, and what its spans measured.
void addPipelineFigures(const config::RunConfig& config, const trace::RankTimeline& t, RankStats& s) {
  const auto place = config::pipelinePlace(s.rank, config.world, config.pp);
  s.pipelineStages = config::stagesOfRank(config::pipelineShapeOf(config), place.pipeRank);
  const PipelineFigures figures = pipelineFigures(t);
  s.bubbleSecondsPerStep = figures.bubbleSecondsPerStep;
  s.bubbleShare = figures.bubbleShare;
  s.peakMicroBatchesInFlight = figures.peakMicroBatchesInFlight;
  s.activationBytesByMicroBatch = activationBytesByMicroBatch(t, measuredActions(t));
}

// A PyTorch job's collectives run outside c10d, by their op's name: an implementation with a
// namespace ("symm_mem::multimem_all_reduce_"), where c10d's backends name theirs "nccl:...".
std::map<std::string, trace::CollectiveTotals> outsideC10dOf(const trace::RankTimeline& t) {
  std::map<std::string, trace::CollectiveTotals> out;
  for (const auto& c : t.collectives) {
    const std::string impl = trace::collectiveImplementation(c);
    if (impl.find("::") == std::string::npos) continue;
    auto& totals = out[impl];
    ++totals.count;
    totals.unsized += c.sizeUnknown ? 1 : 0;
    totals.sizeBytes += trace::collectiveSizeBytes(c);
    totals.seconds += static_cast<double>(c.endNs - c.beginNs) / 1e9;
  }
  return out;
}

// Under --pp: each rank's bubble in the plan laid out with the run's own mean F, B, I and W times
// (stats/pipeline_actions.h), beside the one it measured.
void addPlannedBubbles(const config::RunConfig& config, const trace::RunRecording& rec, std::vector<RankStats>& ranks) {
  std::vector<std::vector<MeasuredAction>> actions;
  for (int r = 0; r < rec.ranks(); ++r) actions.push_back(measuredActions(rec.rank(r)));
  const auto durations = meanActionSeconds(actions);
  if (!durations) return;
  const auto plan = config::plannedTimeline(config::pipelineShapeOf(config), *durations);
  if (!plan) return;
  const auto planned = plannedBubbles(*plan);
  for (auto& s : ranks) {
    const auto row = static_cast<size_t>(config::pipelinePlace(s.rank, config.world, config.pp).pipeRank);
    if (row >= planned.size()) continue;
    s.plannedBubbleSecondsPerStep = planned[row].seconds;
    s.plannedBubbleShare = planned[row].share;
  }
}

}  // namespace

int recordedStepsOf(config::RecordingMode recording, int completedSteps) {
  if (recording == config::RecordingMode::Off) return 0;
  if (recording == config::RecordingMode::Alternate) return (completedSteps + 1) / 2;  // steps 0, 2, 4, ...
  return completedSteps;
}

const RankStats* mostOftenLast(const std::vector<RankStats>& ranks) {
  const RankStats* last = nullptr;
  for (const auto& r : ranks) {
    if (r.groupCollectives > 0 && (!last || r.lastArrivalShare > last->lastArrivalShare)) last = &r;
  }
  return ranks.size() < 2 ? nullptr : last;
}

bool anyRecorded(const std::vector<RankStats>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return r.recorded; });
}

bool anyStepRecorded(const std::vector<RankStats>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return r.recorded && r.recordedSteps > 0; });
}

bool anyStepTimed(const std::vector<RankStats>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return !r.stepSeconds.empty(); });
}

std::vector<trace::CollectiveOp> collectiveOpsShown(const std::vector<const RankStats*>& ranks) {
  using trace::CollectiveOp;
  std::vector<CollectiveOp> ops = {CollectiveOp::AllGather, CollectiveOp::ReduceScatter, CollectiveOp::AllReduce};
  for (auto op : {CollectiveOp::AllToAll, CollectiveOp::Send, CollectiveOp::Recv}) {
    const auto ran = [&](const RankStats* r) { return r->collectives[static_cast<int>(op)].count > 0; };
    if (std::any_of(ranks.begin(), ranks.end(), ran)) ops.push_back(op);
  }
  return ops;
}

std::vector<trace::CollectiveOp> collectiveOpsShown(const std::vector<std::vector<RankStats>>& sessions) {
  std::vector<const RankStats*> firstRanks;
  for (const auto& ranks : sessions) {
    if (!ranks.empty()) firstRanks.push_back(&ranks.front());
  }
  return collectiveOpsShown(firstRanks);
}

int64_t measuredRoleBytes(const RankStats& r, trace::MemoryRole role, bool afterStep, bool host) {
  const int k = static_cast<int>(role);
  if (host) return afterStep ? r.hostAfterLastStep[k] : r.peakHostByRole[k];
  return afterStep ? r.afterLastStep[k] : r.peakByRole[k];
}

bool anyMemoryRecorded(const std::vector<RankStats>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankStats& s) { return s.recorded && s.memoryRecorded; });
}

std::vector<RankStats> computeRankStats(const config::RunConfig& config, const trace::RunRecording& rec,
                                        int64_t parameterCount, const DeviceFacts& device) {
  std::vector<RankStats> out;
  const double peakFlops = deviceLimitsOf(config, device).peakFlops;
  const std::vector<RankStraggling> straggling = stragglingOf(rec);
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    RankStats s;
    s.rank = r;
    s.groupCollectives = straggling[static_cast<size_t>(r)].collectives;
    s.withAStraggler = straggling[static_cast<size_t>(r)].withAStraggler;
    s.lastArrivals = straggling[static_cast<size_t>(r)].lastArrivals;
    s.lastArrivalShare = straggling[static_cast<size_t>(r)].lastArrivalShare();
    s.waitCausedSeconds = straggling[static_cast<size_t>(r)].waitCausedSeconds;
    s.peakByRole = t.peakByRole;
    s.peakTotal = t.peakTotal;
    s.peakDevice = t.peakDevice;
    s.atPeakTotal = t.atPeakTotal;
    s.peakHost = t.host.peakTotal;
    s.peakHostByRole = t.host.peakByRole;
    s.afterLastStep = rolesAfterLastStep(t, t.memory);
    s.hostAfterLastStep = rolesAfterLastStep(t, t.host.memory);
    s.stepSeconds = rec.stepSeconds(r);
    const int steps = static_cast<int>(s.stepSeconds.size());
    // A rank with nothing at all (a PyTorch job's rank without a trace, a rank that failed before
    // its first event) measured nothing: its zeros would read as measurements.
    const bool nothing = t.memory.empty() && t.collectives.empty() && t.compute.empty() && t.steps.empty();
    s.recorded = config.recording != config::RecordingMode::Off && !nothing;
    s.memoryRecorded = !t.memory.empty();
    s.recordedSteps = recordedStepsOf(config.recording, steps);
    if (!s.stepSeconds.empty()) {
      const size_t first = s.stepSeconds.size() > 1 ? 1 : 0;
      s.steadyStepSeconds = std::accumulate(s.stepSeconds.begin() + first, s.stepSeconds.end(), 0.0) /
                            static_cast<double>(s.stepSeconds.size() - first);
    }
    // A job whose batch shardscope does not know (config.batch 0: a PyTorch job's own trace) has
    // step times but no rate: none is made up.
    s.throughputKnown = config.batch > 0;
    if (s.steadyStepSeconds > 0 && s.throughputKnown) {
      const double samples = static_cast<double>(config.batch) / rec.ranks();
      s.samplesPerSecond = samples / s.steadyStepSeconds;
      const double items = itemsPerRankStep(config);
      if (config.model == config::ModelKind::Gpt) s.tokensPerSecond = items / s.steadyStepSeconds;
      s.modelFlopsPerSecond = modelFlopsPerItem(config, parameterCount) * items / s.steadyStepSeconds;
      if (peakFlops > 0) s.mfu = s.modelFlopsPerSecond / peakFlops;
    }
    // Only completed steps' collectives count; per-step figures divide them by recordedSteps.
    s.collectives = rec.collectiveTotals(r, steps);
    s.sentBytesByGroup = rec.sentBytesByGroup(r, steps);
    auto comm = rec.commFigures(r);
    s.overlapPercent = comm.overlapPercent;
    s.exposedCommSeconds = std::move(comm.exposedCommSeconds);
    s.exposedCommSeconds.resize(static_cast<size_t>(steps));
    s.steadyExposedCommSeconds = steadyMeanOfRecorded(s.exposedCommSeconds, config.recording);
    if (s.recordedSteps > 0) {
      s.recomputeSecondsPerStep = static_cast<double>(rec.recomputeNs(r, steps)) / 1e9 / s.recordedSteps;
    }
    s.activationSavedBytes = rec.activationSavedBytes(r);
    if (config.pp > 1) addPipelineFigures(config, t, s);
    s.outsideC10d = outsideC10dOf(t);
    s.droppedEvents = t.dropped;
    s.failedCollectives = t.failedCollectives;
    out.push_back(s);
  }
  if (config.pp > 1) addPlannedBubbles(config, rec, out);
  return out;
}

}  // namespace shardscope::stats
