// Saved records read into the sessions the window draws: a run's trace (--trace), a summary
// (--summary, of a run or a compare), a launched job's directory (worker --trace-dir, or
// listen's), or a PyTorch job's torch.profiler traces (a directory, or the per-rank files). One
// reading for `shardscope view` and the app's Open; it reads files only (no engine), and is slow
// for a large trace, so the app runs it off the window's thread.
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
  RunConfig config;
  std::string error;  // why nothing was read, naming the file and what to do
  std::string notes;  // what was read with something missing or moved, a line each (the clocks too)
};

// `paths`: one file or directory; the per-rank torch.profiler traces of one job; or several
// recordings side by side (a run's trace beside a PyTorch job's folder), a session each. A run's
// .pftrace keeps at most `detailEvents` in detail over its ranks (--window-events; 0: all), its
// older steps folded as it is read, as a live run's are.
OpenedRecord openRecord(const std::vector<std::string>& paths, size_t detailEvents = 0);

// What a path would open as, for the Open panel's listing ("a job's --trace-dir", "torch.profiler
// traces", "trace", "summary"), from a folder's file names or a file's first 4 KiB and (for a
// summary) last 256 KiB; "" when it is none of them (a gzipped summary is not recognised here,
// and opens when named).
std::string describeRecordPath(const std::string& path);

}  // namespace shardscope::ui
