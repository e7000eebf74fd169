// A headless run's trace and memory CSV, written to disk as the run goes, so that the controller
// holds only its last steps in detail (trace::RunRecording::keepLastSteps) and its memory stays
// flat however many steps it runs. The app keeps every event instead: its views draw them.
// Formatting the JSON is the costly part: a thread of its own does it, so the controller's loop
// only hands the older steps over and goes back to reading the ranks' pipes (when it fell behind,
// a rank stopped after a peer's death could be killed at the grace with its step ends unsent).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/run_config.h"
#include "files/output_file.h"
#include "trace/chrome_trace.h"
#include "trace/trace_files.h"
#include "trace/run_recording.h"

namespace shardscope::engine {

// Steps each rank keeps in detail: enough for the figures of the last step (memory after it) and a
// look at the end of a run; older ones are streamed out in batches of as many.
constexpr int kStreamedDetailSteps = 8;

class StreamedOutputs {
 public:
  // Opens the --trace and --memory-csv files the config names (their temporary files, renamed into
  // place at finish()).
  explicit StreamedOutputs(const config::RunConfig& config);
  ~StreamedOutputs();  // the recording keeps its detail again: nothing is handed to a gone object
  StreamedOutputs(const StreamedOutputs&) = delete;
  StreamedOutputs& operator=(const StreamedOutputs&) = delete;

  // From now on `recording` hands its older steps here and drops them: past kStreamedDetailSteps,
  // or (a window's recording, which shows its detail) past `events` per rank.
  void attach(trace::RunRecording& recording);
  void attachWithin(trace::RunRecording& recording, size_t events);
  // The recording keeps everything again (done on the destructor too; a window's recording is
  // detached under its lock).
  void detach();
  // Writes the detail `recording` still holds and the ranks' facts, closes the files and renames
  // them into place; each failure, by path, goes into `errors`.
  void finish(const trace::RunRecording& recording, const trace::RunFacts& facts, std::vector<std::string>& errors);

 private:
  void spill(int rank, trace::RankTimeline&& older);
  int64_t originOf(const trace::RunRecording& recording);
  void writeLoop();   // the writer thread: pieces in the order handed over
  void stopWriter();  // once every piece handed over is written
  void write(int rank, const trace::RankTimeline& detail, int64_t origin);

  struct Piece {
    int rank = 0;
    trace::RankTimeline detail;
    int64_t originNs = 0;
  };
  // Pieces waiting for the writer, at most kMaxWaitingPieces: a writer slower than the run holds
  // the controller back (as writing on the controller's own loop would) instead of letting memory
  // grow.
  static constexpr size_t kMaxWaitingPieces = 64;
  std::mutex mutex_;
  std::condition_variable ready_;  // a piece to write, or closing
  std::condition_variable room_;   // a piece taken: room for another
  std::deque<Piece> pieces_;
  bool closing_ = false;
  std::thread writer_;

  trace::RunRecording* recording_ = nullptr;
  std::optional<files::OutputFile> trace_;
  std::unique_ptr<trace::TraceWriter> traceWriter_;  // Chrome JSON or Perfetto, by --trace's name
  std::optional<files::OutputFile> csv_;
  // Trace times count from here: the earliest event when the first steps were streamed, before
  // which every rank had started. Fixed then, so every piece shares it.
  std::optional<int64_t> originNs_;
};

}  // namespace shardscope::engine
