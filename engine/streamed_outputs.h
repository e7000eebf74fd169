// A headless run's trace and memory CSV, written to disk as the run goes, so that the controller
// holds only its last steps in detail (trace::RunRecording::keepLastSteps) and its memory stays
// flat however many steps it runs. The app keeps every event instead: its views draw them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "files/output_file.h"
#include "trace/chrome_trace.h"
#include "trace/run_recording.h"

namespace shardscope {

// Steps each rank keeps in detail: enough for the figures of the last step (memory after it) and a
// look at the end of a run; older ones are streamed out in batches of as many.
constexpr int kStreamedDetailSteps = 8;

class StreamedOutputs {
 public:
  // Opens the --trace and --memory-csv files the config names (their temporary files, renamed into
  // place at finish()).
  explicit StreamedOutputs(const RunConfig& config);
  ~StreamedOutputs();  // the recording keeps its detail again: nothing is handed to a gone object
  StreamedOutputs(const StreamedOutputs&) = delete;
  StreamedOutputs& operator=(const StreamedOutputs&) = delete;

  // From now on `recording` hands its older steps here and drops them.
  void attach(trace::RunRecording& recording);
  // Writes the detail `recording` still holds, closes the files and renames them into place; each
  // failure, by path, goes into `errors`.
  void finish(const trace::RunRecording& recording, std::vector<std::string>& errors);

 private:
  void spill(int rank, const trace::RankTimeline& older);
  int64_t originOf(const trace::RunRecording& recording);

  trace::RunRecording* recording_ = nullptr;
  std::optional<files::OutputFile> trace_;
  std::optional<trace::ChromeTraceWriter> traceWriter_;
  std::optional<files::OutputFile> csv_;
  // Trace times count from here: the earliest event when the first steps were streamed, before
  // which every rank had started. Fixed then, so every piece shares it.
  std::optional<int64_t> originNs_;
};

}  // namespace shardscope
