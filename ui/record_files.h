// Saved records as the sessions the window draws: what the one door (recordings/open_recording.h)
// read of a run's trace (--trace), a summary (--summary, of a run or a compare), a launched job's
// directory (worker --trace-dir, or listen's), a PyTorch job's torch.profiler traces, snapshots or
// Flight Recorder dumps. One reading for `shardscope view` and the app's Open; it reads files only
// (no engine), and is slow for a large trace, so the app runs it off the window's thread.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "ui/session_store.h"

namespace shardscope::ui {

struct OpenedRecord {
  std::vector<Session> sessions;
  // The record's configuration for the panels (Run again, Estimate), when it is shardscope's own
  // run; a PyTorch job's model is not in its records (false).
  bool ownConfig = false;
  config::RunConfig config;
  std::string error;  // why nothing was read, naming the file and what to do
  std::string notes;  // what was read with something missing or moved, a line each (the clocks too)
  // A record says its run's recording was incomplete (events dropped, steps lost): `view` exits 3.
  bool incomplete = false;
};

// `paths`: one file or directory; the per-rank torch.profiler traces of one job; or several
// recordings side by side (a run's trace beside a PyTorch job's folder), a session each. A run's
// .pftrace keeps at most `detailEvents` in detail over its ranks (--window-events; 0: all), its
// older steps folded as it is read, as a live run's are.
OpenedRecord openRecord(const std::vector<std::string>& paths, size_t detailEvents = 0);

}  // namespace shardscope::ui
