// Per-rank figures of a finished (or failed) run, derived from its recording: memory peaks by role,
// step times, throughput, per-collective totals and comm/compute overlap. The summary JSON, the
// CLI tables, `compare` and the UI all show these.
#pragma once

#include <array>
#include <string>
#include <map>
#include <vector>

#include "stats/device_limits.h"
#include "config/run_config.h"
#include "trace/run_recording.h"

namespace shardscope::stats {

struct RankStats;
// What a rank measured of one role, as a prediction states it: at its peak or after the last step,
// in the device's memory or (--offload cpu) the host's.
int64_t measuredRoleBytes(const RankStats& rank, trace::MemoryRole role, bool afterStep, bool host);

struct RankStats {
  int rank = 0;
  trace::RoleBytes peakByRole{};   // each role's own maximum
  int64_t peakTotal = 0;           // maximum of the sum over tensor roles (peak allocated)
  int64_t peakDevice = 0;          // maximum with the device lanes (GPU: reserved + runtime)
  trace::RoleBytes atPeakTotal{};  // the split by role at that moment
  // --offload cpu on a GPU: the host memory the rank held for training (pinned shards and
  // gradients, the optimizer's state), its peak and each role's own maximum; 0 otherwise.
  int64_t peakHost = 0;
  trace::RoleBytes peakHostByRole{};
  trace::RoleBytes hostAfterLastStep{};  // and what it kept there when the last step ended
  trace::RoleBytes afterLastStep{};      // the split by role when the last completed step ended: what
                                         // a rank keeps between steps (the optimizer's temporaries gone)
  std::vector<double> stepSeconds;
  bool recorded = true;            // memory, collectives and compute spans were recorded (not
                                   // --recording off); if not, only times and throughput are real
  bool memoryRecorded = true;      // and memory among them: false for a PyTorch job's trace
                                   // without [memory] events (profile_memory=False)
  int recordedSteps = 0;           // completed steps that were recorded: all with --recording on,
                                   // the even ones with alternate. Per-step figures divide by it.
  double steadyStepSeconds = 0;    // mean over steps after the first (warm-up); all if only one
  bool throughputKnown = true;     // false: the job's batch is unknown (a PyTorch job's trace)
  double samplesPerSecond = 0;     // this rank's samples / steady step time
  double tokensPerSecond = 0;      // gpt: samples x seq; mlp: 0
  double modelFlopsPerSecond = 0;  // 6 x parameters x (tokens | samples) / s
  double mfu = 0;                  // model FLOP/s / the peak (device_limits.h); 0 without one
  std::array<trace::CollectiveTotals, trace::kCollectiveOpCount> collectives{};
  // Bytes sent (ring schedule) in each process group (trace::ProcessGroup): under HSDP what stays in
  // the shard group and what crosses to the other replicas.
  std::array<int64_t, trace::kProcessGroupCount> sentBytesByGroup{};
  double overlapPercent = 0;
  std::vector<double> exposedCommSeconds;  // per completed step: collective time no compute hid
  double steadyExposedCommSeconds = 0;     // mean over recorded steps after the first (all if one)
  double recomputeSecondsPerStep = 0;      // activation checkpointing's extra forwards, per recorded step
  // The activation bytes held when backward began (the largest over recorded micro-batches): what
  // forward saved for backward, the quantity activation formulas predict. The activation peak is
  // higher: it adds backward's activation gradients and temporaries.
  int64_t activationSavedBytes = 0;
  // Under --pp (stats/pipeline_stats.h): the stages this rank holds, its bubble (the time in its
  // steps with no forward or backward running) and the most micro-batches it held activations of.
  std::vector<int> pipelineStages;
  double bubbleSecondsPerStep = 0;
  double bubbleShare = 0;
  int peakMicroBatchesInFlight = 0;
  // Per micro-batch, what its forwards left held on the rank (stats::activationBytesByMicroBatch);
  // empty without memory recorded.
  std::vector<double> activationBytesByMicroBatch;
  // The bubble the schedule plans for it, laid out with the run's mean action times and no waiting
  // (stats/pipeline_actions.h), and its share of the planned step; 0 where nothing was measured.
  // Of `collectives`, those a PyTorch job ran outside c10d (symm_mem::..., a framework's own), by
  // their op's name (import/profiler_collectives.h): kept apart, as no c10d view of the job shows them.
  std::map<std::string, trace::CollectiveTotals> outsideC10d;
  double plannedBubbleSecondsPerStep = 0;
  double plannedBubbleShare = 0;
  int64_t droppedEvents = 0;
  // The collectives the backend failed on this rank (their timeout passed, a peer went away), which
  // never ended (RankTimeline::failedCollectives): counted in no figure above.
  std::vector<trace::Event> failedCollectives;
  // Stragglers (stats/stragglers.h): of the collectives of its groups every member recorded, those
  // this rank issued last, and the time the others had waited for it there.
  int64_t groupCollectives = 0;
  int64_t withAStraggler = 0;   // of them, those one member issued clearly last (past the noise floor)
  int64_t lastArrivals = 0;     // of those, this rank's
  double lastArrivalShare = 0;  // lastArrivals / withAStraggler, 0 to 1
  double waitCausedSeconds = 0;
};

// The rank that arrived last at the largest share of its groups' collectives (stats/stragglers.h),
// or nullptr for a run of one rank or with no collective of a group recorded.
const RankStats* mostOftenLast(const std::vector<RankStats>& ranks);

// How many of `completedSteps` a run with this --recording mode recorded.
int recordedStepsOf(config::RecordingMode recording, int completedSteps);

// Whether any rank recorded memory and collectives (a run not made with --recording off).
bool anyRecorded(const std::vector<RankStats>& ranks);
// Whether any rank's memory was recorded.
bool anyMemoryRecorded(const std::vector<RankStats>& ranks);
// Whether any rank recorded a completed step. Per-step figures (collectives, overlap, exposed
// communication, what forward saved) mean nothing without one: CUDA memory snapshots on their own
// have no steps, and a run can stop in its first.
bool anyStepRecorded(const std::vector<RankStats>& ranks);
// Whether any rank timed a completed step (--recording off times them too).
bool anyStepTimed(const std::vector<RankStats>& ranks);

// The collectives a table gives a row or column of: all-gather, reduce-scatter and all-reduce
// always, and all-to-all, send and recv (a PyTorch job's) where one of `ranks` ran any.
std::vector<trace::CollectiveOp> collectiveOpsShown(const std::vector<const RankStats*>& ranks);
// The same over sessions side by side, by their first ranks (rank 0's figures are the ones shown).
std::vector<trace::CollectiveOp> collectiveOpsShown(const std::vector<std::vector<RankStats>>& sessions);

// What one rank processes per step: tokens (gpt) or samples (mlp), and the model FLOPs per one of
// them (6 x parameters; under LoRA 4 x parameters + 2 x the trained adapters).
double itemsPerRankStep(const config::RunConfig& config);
double modelFlopsPerItem(const config::RunConfig& config, int64_t parameterCount);

// The split by role at the end of the last completed step (all zero before the first one ends).
trace::RoleBytes rolesAfterLastStep(const trace::RankTimeline& timeline);

// `device`: what a GPU rank reported of its device, MFU's peak when --peak-tflops states none.
std::vector<RankStats> computeRankStats(const config::RunConfig& config, const trace::RunRecording& recording,
                                        int64_t parameterCount, const DeviceFacts& device = {});

}  // namespace shardscope::stats
