// What a run gives back and what its caller hands it: its result, where its events go, and the
// callbacks it calls as it goes (engine/launch/run_controller.h runs it). Apart from the controller, so
// that its parts (rank_processes, run_observer, run_summary) see these without seeing it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stats/device_limits.h"
#include "trace/collective_log.h"
#include "trace/events.h"
#include "trace/rank_clock.h"
#include "trace/run_recording.h"

namespace shardscope::engine {

struct RunResult {
  bool ok = false;
  bool stopped = false;        // shouldStop ended it (Stop, 'q', a signal): "interrupted"
  std::string error;           // set when !ok: names the rank and what to do
  std::vector<double> losses;  // global mean loss per completed step
  // The steps every rank finished: a run's are its losses; a reopened trace's, what its end says
  // (its losses are the steps it holds, fewer where it lost some); none where a record does not say.
  std::optional<int64_t> stepsTrained;
  std::vector<std::vector<double>> stepSeconds;  // [rank][step] wall time per step
  std::vector<std::string> rankPlacements;       // [rank] each rank's own (its GPU, its cores)
  std::vector<int> untracedRanks;                // a PyTorch job's ranks no trace was given for
  std::string deviceDescription;                 // all of them in one line (trace/rank_placements.h),
                                                 // e.g. "cpu / gloo" or "cpu / gloo / rank 0: cores 0; ..."
  int64_t parameterCount = 0;
  stats::DeviceFacts device;  // rank 0's GPU (memory, measured peak); zero on CPU
  int worldSize = 0;
  bool ranksForked = false;       // the ranks were forked from the controller, not exec'd (engine/launch/rank_fork.h)
  trace::RunRecording recording;  // what the ranks recorded, merged in time order; run
                                  // headless, only the last steps in detail and the
                                  // figures of the rest (StreamedOutputs)
                                  // (empty when the run was given a RecordingSink)
  int64_t outOfOrderEvents = 0;   // events the merger saw after later ones (counted)
  double controllerCatchUpSeconds = 0;  // how long the controller's loop ran at normal priority to keep
                                        // up with the ranks (engine/recording/catch_up_turns.h)
  // CPU the controller's process spent while the ranks ran (its loop, its helper, the outputs it
  // streamed; in the app, the window's threads too), not the ranks' own; none where no run was
  // observed (a trace reopened).
  std::optional<double> controllerCpuSeconds;
  std::vector<std::string> outputErrors;  // --trace, --memory-csv, --summary that could not be
                                          // written, one line each; the others were written
  std::vector<std::string> warnings;      // outputs someone else wrote while the run went, which
                                          // the run's own replaced, one line each
  std::string source;                     // "torch.profiler" / "torch.cuda.memory": a PyTorch
                                          // job's own records, whose model, batch and device
                                          // shardscope does not know
  std::string title;                      // such a job's session title (its closest strategy, or
                                          // "memory only"), which its config cannot carry
  std::vector<trace::RankClock> clocks;   // [rank] its clock against rank 0's, for a job whose
                                          // ranks recorded themselves (view DIR --summary)
  // When a rank stalled or failed: each rank's last collectives as it issued them, the one it
  // waits in included (trace/issued_collectives.h); null otherwise.
  std::shared_ptr<const trace::CollectiveLogs> lastCollectives;
};

// --step-gate: where the ranks are. Every rank waits before `next` when waiting == ranks.
struct GateStatus {
  int waiting = 0;  // ranks waiting at the gate now
  int ranks = 0;
  std::string next;       // the event group rank 0 waits before ("all_gather blocks.1"), or ""
  int step = -1;          // its step
  bool released = false;  // Continue was given: the gate is off for the rest of the run
};

// What the user tells a gated run: release every rank for one event group, or for good.
enum class GateCommand { None, Step, Continue };

// Where a run's merged events go, when its caller wants to hold them itself: the app points this
// at its session, so each run is held once (not also in RunResult::recording, which stays empty).
// `withRecording(use)` calls `use` on the caller's recording under whatever lock keeps its readers
// (a window on another thread) out. The controller resets it to the run's world size at the start,
// appends a batch of events at a time, and reads it at the end for the summary, trace and CSV.
struct RecordingSink {
  std::function<void(const std::function<void(trace::RunRecording&)>& use)> withRecording;
  // The most events per rank the caller's recording holds in detail (0: every one). Past it, a
  // rank's older steps are folded (their figures kept) and streamed to the run's --trace and
  // --memory-csv: a window showing a long run stays within its memory.
  size_t maxDetailEventsPerRank = 0;

  // `use` on the caller's recording (under its lock), or on the run's `own` when there is no caller's.
  void use(trace::RunRecording& own, const std::function<void(trace::RunRecording&)>& fn) const {
    if (withRecording)
      withRecording(fn);
    else
      fn(own);
  }
};

struct RunCallbacks {
  // Called once every rank has finished `step` (0-based).
  std::function<void(int step, double loss, double slowestRankSeconds)> onStep;
  // Every event any rank sent, as it arrives.
  std::function<void(const trace::Event&)> onEvent;
  // Every data and step event, merged across ranks in time order (what the recording gets).
  std::function<void(const trace::Event&)> onMerged;
  // Called after each batch of events (at least every 100 ms) on the controller's thread.
  std::function<void()> onIdle;
  // Polled every 100 ms: true stops the run (the ranks are terminated; the result says so, and the
  // outputs are written with what was recorded, status "interrupted").
  std::function<bool()> shouldStop;
  // --step-gate: called when the ranks' place at the gate changes, and polled (every 100 ms, or
  // as events arrive) for the user's Step or Continue. A run without these is never held: it is
  // released for good at once.
  std::function<void(const GateStatus&)> onGate;
  std::function<GateCommand()> gateCommand;
};

}  // namespace shardscope::engine
