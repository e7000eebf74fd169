#include "engine/launch/run_controller.h"

#include <cstdio>
#include <optional>
#include <tuple>

#include <torch/cuda.h>

#include "engine/launch/rank_processes.h"
#include "engine/launch/run_observer.h"
#include "engine/launch/run_summary.h"
#include "engine/recording/streamed_outputs.h"
#include "engine/recording/tensor_files.h"
#include "stats/hang_summary.h"
#include "trace/chrome_trace.h"
#include "trace/trace_files.h"
#include "files/output_file.h"
#include "files/user_json.h"

namespace shardscope::engine {

namespace {

// What the ranks reported of themselves and how the run ended, kept at the trace's end for the run
// opened again: `view` says what its recording lost, as the run did.
trace::RunFacts runFactsOf(const RunResult& result, const trace::RunRecording& recording) {
  trace::RunFacts facts{result.parameterCount, result.device.memoryBytes, result.device.peakFlops,
                        result.rankPlacements};
  facts.status = runStatusOf(result, recording);
  if (!result.ok) facts.error = result.error;
  facts.stepsTrained = result.stepsTrained;
  for (int r = 0; r < recording.ranks(); ++r) facts.droppedEvents.push_back(recording.rank(r).dropped);
  return facts;
}

// Every output is written even when another fails (a CSV on a full disk must not cost the trace);
// each failure is kept in the result, by name, and makes the run's exit status non-zero. A headless
// run has streamed its trace and CSV as it went: `streamed` closes them.
// The outputs as they were when the run started: one that changed by the end was written by
// someone else meanwhile (two runs given one --summary), and the run says so as it replaces it.
struct OutputStamps {
  explicit OutputStamps(const config::RunConfig& c)
      : trace(files::stampOf(c.tracePath)),
        csv(files::stampOf(c.memoryCsvPath)),
        summary(files::stampOf(c.summaryPath)) {}
  void warnOfChanges(const config::RunConfig& c, RunResult& result) const {
    for (const auto& [path, stamp, what] : {std::tuple{&c.tracePath, &trace, "trace"},
                                            {&c.memoryCsvPath, &csv, "memory CSV"},
                                            {&c.summaryPath, &summary, "summary"}}) {
      if (auto warning = files::changedMeanwhile(*path, *stamp, what); !warning.empty())
        result.warnings.push_back(warning);
    }
  }
  files::FileStamp trace, csv, summary;
};

void finishOutputs(const config::RunConfig& config, RunResult& result, const trace::RunRecording& recording,
                   StreamedOutputs* streamed = nullptr, const OutputStamps* atStart = nullptr) {
  auto keep = [&](std::optional<std::string> error) {
    if (error) result.outputErrors.push_back(*error);
  };
  if (atStart) atStart->warnOfChanges(config, result);
  if (streamed) {
    streamed->finish(recording, runFactsOf(result, recording), result.outputErrors);
  } else if (!config.tracePath.empty()) {
    keep(files::writeOutputFile(config.tracePath, [&](std::ostream& out) {
      trace::writeTrace(trace::traceFormatOfName(config.tracePath).value_or(trace::TraceFormat::ChromeJson), out,
                        recording, summaryJson(config, result, recording)["config"], runFactsOf(result, recording));
    }));
  }
  if (!streamed && !config.memoryCsvPath.empty()) {
    keep(files::writeOutputFile(config.memoryCsvPath,
                                [&](std::ostream& out) { trace::writeMemoryCsv(out, recording); }));
  }
  if (!config.exportDir.empty() && !result.losses.empty()) {
    try {
      saveTensor(config.exportDir + "/losses.pt",
                 at::tensor(result.losses, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat));
    } catch (const std::exception& e) {
      result.outputErrors.push_back("cannot write '" + config.exportDir + "/losses.pt': " + e.what());
    }
  }
  // Last, so it can name the outputs that failed before it.
  if (!config.summaryPath.empty()) keep(writeSummaryFile(config.summaryPath, config, result, recording));
}

}  // namespace

std::optional<std::string> checkDeviceAvailable(const config::RunConfig& config) {
  if (config.device == config::DeviceKind::Cuda && torch::cuda::device_count() == 0) {
    return std::string(
        "--device cuda, but no CUDA device is visible here. Use --device cpu, or "
        "run on a machine with an NVIDIA GPU.");
  }
  return std::nullopt;
}

namespace {

// Where a failed rank was: the step it was in, the first that not every rank finished (its own step
// ends may have been lost with it, so its lastStep can lag behind). A rank that never said where it
// runs (the RunInfo it sends once its process group, model and strategy are up) was still setting up.
std::string whereRankFailed(const config::RunConfig& config, const RunResult& result, int rank, int finishedSteps) {
  const auto& placements = result.rankPlacements;
  if (finishedSteps == 0 && rank < static_cast<int>(placements.size()) && placements[rank].empty())
    return " while setting up, before step 1";
  return finishedSteps < config.steps ? " during step " + std::to_string(finishedSteps + 1) : " after the last step";
}

// "rank 1 died: killed by signal 9 (Killed) during step 3". Every rank that died of a signal is
// named, each with its signal and step ("rank 1 died: ...; rank 2 died: ..."): two killed at once
// are two causes. Otherwise the root cause alone (its peers' lost connections follow from it). The
// step comes from the finished count, the summary's: the printed "step N/M" lines come from step
// ends as they arrive, and lag behind those a killed rank's peers prove (concludeRun).
std::string failedRanksText(const config::RunConfig& config, const std::vector<RankProcess>& ranks,
                            const std::vector<int>& failureOrder, const RunResult& result, int finishedSteps) {
  std::vector<int> died;
  for (const auto& p : ranks) {
    if (diedOfASignal(p)) died.push_back(p.rank);
  }
  if (died.size() > 1) {
    std::string text;
    for (int r : died) {
      text += (text.empty() ? "rank " : "; rank ") + std::to_string(r) + " " + describeExit(ranks[r]) +
              whereRankFailed(config, result, r, finishedSteps);
    }
    return text;
  }
  const RankProcess& cause = ranks[rootCause(ranks, failureOrder)];
  const std::string where = whereRankFailed(config, result, cause.rank, finishedSteps);
  return "rank " + std::to_string(cause.rank) + " " +
         (cause.reportedError.empty() ? describeExit(cause) + where : "failed" + where + ": " + cause.reportedError);
}

// What ended the run, in one message naming the rank and the step where one is to blame.
std::string conclusionMessage(const config::RunConfig& config, const std::vector<RankProcess>& ranks,
                              const RunObservation& observed, const RunResult& result, int finishedSteps) {
  const std::string stepsDone = std::to_string(finishedSteps) + " of " + std::to_string(config.steps) + " steps";
  if (!observed.diverged.empty()) return observed.diverged;
  if (observed.stoppedByUser) return "stopped by the user after " + stepsDone + ".";
  if (!observed.stalled.empty()) {
    std::string killed;
    for (const auto& p : ranks) {
      if (wasKilledByController(p)) killed += (killed.empty() ? "" : ", ") + std::to_string(p.rank);
    }
    const std::string limit = files::shownNumber(config.stallTimeoutS);
    return observed.stalled + ". The run was stopped after " + stepsDone +
           (killed.empty() ? "" : " (shardscope killed rank " + killed + ", which did not stop when asked)") +
           "; what was recorded is kept. Is the rank stopped (SIGSTOP, a debugger)? If it may "
           "rightly be silent that long, raise --stall-timeout (it is " +
           limit + " s).";
  }
  if (observed.failureOrder.empty()) return "";
  return failedRanksText(config, ranks, observed.failureOrder, result, finishedSteps) +
         ". The other ranks were stopped; " + std::to_string(finishedSteps) + " of " + std::to_string(config.steps) +
         " steps finished on every rank, and what was recorded is kept.";
}

// Conclude: the finished steps, whether the run succeeded, and why not.
void concludeRun(const config::RunConfig& config, const std::vector<RankProcess>& ranks, RunObservation observed,
                 RunResult& result) {
  // A step any rank finished, every rank finished: a rank's step ends with the loss all-reduce,
  // which completes only once every rank has trained that step and sent its loss. So a killed rank
  // whose last step ends were still in its queue has them proven by its peers', and the run's
  // finished steps are all of those (the losses are the same on every rank).
  for (auto s = static_cast<int>(result.losses.size()); observed.lossOfStep.count(s) > 0; ++s) {
    result.losses.push_back(observed.lossOfStep[s]);
  }
  result.stepsTrained = static_cast<int64_t>(result.losses.size());
  result.stopped = observed.diverged.empty() && observed.stoppedByUser;
  result.error = conclusionMessage(config, ranks, observed, result, static_cast<int>(result.losses.size()));
  result.ok = result.error.empty();
  if (!result.ok && result.lastCollectives) {
    result.error += " Where the ranks' collectives stopped: " + stats::hangVerdict(*result.lastCollectives);
  }
}

// A run that ends before its ranks start still writes its outputs (a summary saying why).
RunResult failedBeforeLaunch(const config::RunConfig& config, RunResult result, std::string error) {
  result.error = std::move(error);
  result.stepsTrained = 0;
  finishOutputs(config, result, result.recording);
  return result;
}

}  // namespace

RunResult runTraining(const config::RunConfig& config, const std::string& workerExecutable,
                      const RunCallbacks& callbacks, const RecordingSink& sink) {
  const OutputStamps outputsAtStart(config);
  RunResult result;
  result.worldSize = config.world;
  result.stepSeconds.assign(config.world, {});
  result.rankPlacements.assign(config.world, "");
  if (auto error = checkDeviceAvailable(config)) return failedBeforeLaunch(config, std::move(result), *error);
  if (auto error = config::makeOutputDirectories(config)) return failedBeforeLaunch(config, std::move(result), *error);
  if (!config.exportDir.empty()) {
    // The run's own description next to its tensors, so an outside check can rebuild the model.
    const std::string text = config.toJson().dump(2);
    if (auto error = files::writeOutputFile(config.exportDir + "/config.json",
                                            [&](std::ostream& out) { out << text << "\n"; })) {
      result.outputErrors.push_back(*error);
    }
  }
  std::optional<LaunchedRanks> launched;
  try {
    launched.emplace(config, workerExecutable);
    result.ranksForked = launched->forked();
  } catch (const std::exception& e) {
    return failedBeforeLaunch(config, std::move(result), e.what());
  }
  // Headless, the run's own recording keeps only its last steps and streams the rest to the files;
  // a caller's recording (the app's) keeps everything for its views, or what its budget allows.
  std::optional<StreamedOutputs> streamed;
  if (!sink.withRecording) {
    streamed.emplace(config).attach(result.recording);
  } else if (sink.maxDetailEventsPerRank > 0) {
    streamed.emplace(config);
    sink.use(result.recording, [&](trace::RunRecording& r) { streamed->attachWithin(r, sink.maxDetailEventsPerRank); });
  }
  RunObservation observed = observeRanks(config, launched->ranks(), callbacks, sink, result);
  concludeRun(config, launched->ranks(), std::move(observed), result);
  // Under the sink's lock: a window on another thread may still draw the recording meanwhile.
  sink.use(result.recording, [&](trace::RunRecording& r) {
    finishOutputs(config, result, r, streamed ? &*streamed : nullptr, &outputsAtStart);
    if (streamed) streamed->detach();
  });
  return result;
}

}  // namespace shardscope::engine
