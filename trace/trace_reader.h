// Reads a trace written by `--trace` (trace/chrome_trace.h) back into a RunRecording, so a saved
// run can be browsed without running anything (`shardscope view FILE`).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "trace/collective_log.h"
#include "trace/rank_clock.h"
#include "trace/run_recording.h"
#include "trace/trace_writer.h"

namespace shardscope::trace {

struct LoadedTrace {
  RunRecording recording;
  config::RunConfig config;           // from the trace's otherData (defaults where absent)
  std::string error;                  // set when the file could not be read
  std::string note;                   // read, with something missing (said, not fatal): per-rank files
  std::string device;                 // each rank's device and backend, where the files say (per-rank files)
  bool ranksFailed = false;           // a rank reported an error (per-rank files)
  std::string clocks;                 // the ranks put on rank 0's clock, by how much (per-rank files)
  std::string title;                  // what the session is called, when not its strategy's name
  std::string jobLabel;               // what ran, when not shardscope's own model (its config's batch is then 0)
  std::string source;                 // what recorded it, when not shardscope ("torch.profiler", "torch.cuda.memory")
  std::vector<RankClock> rankClocks;  // per rank (per-rank files): its readings, as applied
  std::vector<std::string> rankPlacements;  // per rank: its device and backend (per-rank files)
  std::vector<int> untracedRanks;           // a job's ranks no file was given for (torch.profiler)
  int64_t parameterCount = 0;               // the model's, as the ranks reported it
  int64_t deviceMemoryBytes = 0;            // rank 0's GPU as it reported it; 0 on CPU or unknown
  double measuredPeakFlops = 0;             // the matmul peak rank 0 measured; 0 when none was
  // How the run that wrote a trace ended, as the trace's end says (RunFacts): Unknown and none in a
  // trace written before they were kept. Its ranks' dropped events are in the recording.
  RunStatus runStatus = RunStatus::Unknown;
  std::string runError;                 // why it failed or was interrupted
  std::optional<int64_t> stepsTrained;  // the steps every rank finished, the trace holding fewer or all
  // Per-rank files of a job a rank failed in: each rank's last collectives as it issued them.
  std::shared_ptr<const CollectiveLogs> lastCollectives;
};

// `detailEvents` > 0: the recording holds at most about that many events in detail over its ranks,
// folding its older steps as it reads, as loadPerfettoTrace does (trace/perfetto_reader.h); 0: all.
LoadedTrace loadChromeTrace(const std::string& path, size_t detailEvents = 0);

// Whether a file starts like a Chrome trace (a "traceEvents" in its first 4 KiB, gzipped or not),
// rather than a summary, without parsing it.
bool looksLikeChromeTrace(const std::string& path);

// A trace's end, read: its placements and facts into `out`, and each rank's dropped events into its
// recording, as the run counted them (so its figures, summary and window say it is incomplete).
// After the trace's events, so its ranks are known.
void applyRunFacts(const RunFacts& facts, LoadedTrace& out);

// Of the steps its run trained (as the trace's end says), those the trace does not hold whole: its
// first recorded rank's step spans that were dropped with a full buffer. 0 where it does not say.
int64_t stepsLost(const LoadedTrace& loaded);
// What the record lost, in one line ("the run trained 10000 steps, and the trace lost 1219 of them;
// 717503 events were dropped (rank 0: ...)"), or "" when it lost nothing it knows of.
std::string incompleteRecordingText(const LoadedTrace& loaded);

// Its note, clock and incomplete-recording lines, and how its run ended when not well, each
// prefixed with `where` (the record's path): for a terminal, or the app's Open panel.
std::string loaderNotes(const std::string& where, const LoadedTrace& loaded);

}  // namespace shardscope::trace
