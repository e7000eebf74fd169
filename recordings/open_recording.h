// The one door: what the app's Open, `view`, `view --summary` (and a viewer without the engine)
// call to read whatever a user names. It asks the table of readers (recordings/readers.h) what each
// path is, reads it, and gives back the recordings read, or an error naming the file and the fix.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "import/flight_recorder.h"
#include "recordings/readers.h"
#include "stats/summary_reader.h"
#include "trace/trace_reader.h"

namespace shardscope::recordings {

// One recording read: a timeline (trace), a summary's figures (summary), or Flight Recorder's
// collective logs (dumps), as its kind says.
struct OpenedPart {
  RecordingKind kind = RecordingKind::Summary;
  std::string where;                 // the path it was read from, or "FIRST and N more"
  trace::LoadedTrace trace;          // ProfilerJob, CudaSnapshots, JobDirectory, PerfettoTrace, ChromeTrace
  stats::LoadedSummary summary;      // Summary
  import::LoadedFlightRecord dumps;  // FlightRecorder
};

struct Recording {
  std::vector<OpenedPart> parts;  // in the order named
  std::string error;              // why nothing was read: names the file and what to do
};

struct OpenOptions {
  // A run's .pftrace keeps at most this many events in detail over its ranks, its older steps
  // folded as it is read (--window-events; 0: all).
  size_t detailEvents = 0;
};

// `paths`: one file or folder; the per-rank files of one job (torch.profiler traces with their
// snapshots, or Flight Recorder dumps); or several recordings side by side, a part each.
Recording openRecording(const std::vector<std::string>& paths, const OpenOptions& options = {});

// "FIRST" or "FIRST and N more": how a recording of several files is named.
std::string nameOfPaths(const std::vector<std::string>& paths);

}  // namespace shardscope::recordings
