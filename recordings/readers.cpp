#include "recordings/readers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "files/readable_path.h"
#include "import/flight_recorder.h"
#include "import/profiler_trace.h"
#include "import/snapshot_job.h"
#include "stats/summary_reader.h"
#include "trace/perfetto_reader.h"
#include "trace/rank_event_files.h"

namespace shardscope::recordings {

namespace fs = std::filesystem;

namespace {

constexpr std::streamoff kSummaryTailBytes = 256 << 10;

// A summary's keys are written in name order: "schema" comes after its ranks and before its
// steps, so near its end; only the end is read.
bool summarySchemaNearEnd(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - kSummaryTailBytes);
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail.find("\"shardscope.summary/") != std::string::npos ||
         tail.find("\"shardscope.compare/") != std::string::npos;
}

bool profilerJob(const std::string& path, bool directory) {
  return directory ? import::isProfilerTraceDirectory(path) : import::looksLikeProfilerTrace(path);
}

// A folder of dumps alone: beside a job's own files or its profiler traces the dumps are that
// job's, and the job is read.
bool flightRecorder(const std::string& path, bool directory) {
  if (!directory) return import::looksLikeFlightRecorderDump(path);
  return import::isFlightRecorderDirectory(path) && !import::isProfilerTraceDirectory(path) &&
         !trace::isRankEventDirectory(path);
}

bool cudaSnapshots(const std::string& path, bool directory) {
  return directory ? import::isCudaSnapshotDirectory(path) : import::isCudaSnapshotFileName(path);
}

// Any folder no reader before it took: its loader says what a job's folder holds when it is not one.
bool jobDirectory(const std::string&, bool directory) { return directory; }

bool perfettoTrace(const std::string& path, bool directory) {
  return !directory && trace::looksLikePerfettoTrace(path);
}

bool chromeTrace(const std::string& path, bool directory) { return !directory && trace::looksLikeChromeTrace(path); }

bool summary(const std::string& path, bool directory) { return !directory && summarySchemaNearEnd(path); }

}  // namespace

const std::vector<Reader>& readers() {
  // The order settles what could be read two ways: a Flight Recorder dump before the file kinds
  // (its JSON names no traceEvents, its pickle is no snapshot); torch.profiler's traces before
  // shardscope's Chrome JSON (both hold traceEvents; Kineto's start with schemaVersion).
  static const std::vector<Reader> table = {
      {RecordingKind::FlightRecorder, "Flight Recorder dumps", "Flight Recorder dump", flightRecorder, true, false},
      {RecordingKind::ProfilerJob, "torch.profiler traces", "torch.profiler trace", profilerJob, true, true},
      {RecordingKind::CudaSnapshots, "CUDA memory snapshots", "CUDA memory snapshot", cudaSnapshots, true, false},
      {RecordingKind::JobDirectory, "a job's --trace-dir", nullptr, jobDirectory, false, false},
      {RecordingKind::PerfettoTrace, nullptr, "Perfetto trace", perfettoTrace, false, false},
      {RecordingKind::ChromeTrace, nullptr, "trace", chromeTrace, false, true},
      {RecordingKind::Summary, nullptr, "summary", summary, false, true},
  };
  return table;
}

const Reader& readerOf(RecordingKind kind) {
  for (const auto& reader : readers()) {
    if (reader.kind == kind) return reader;
  }
  return readers().back();  // every kind has a row: not reached
}

std::optional<RecordingKind> recognise(const std::string& path) {
  std::error_code error;
  const bool directory = fs::is_directory(path, error);
  for (const auto& reader : readers()) {
    if (reader.recognises(path, directory)) return reader.kind;
  }
  return std::nullopt;
}

std::string describePath(const std::string& path) {
  if (!files::cannotOpenReason(path).empty()) return "";  // a FIFO in a listing is never opened
  std::error_code error;
  const bool directory = fs::is_directory(path, error);
  const std::string ext = fs::path(path).extension().string();
  const bool json = ext == ".json" || ext == ".gz";
  for (const auto& reader : readers()) {
    const char* name = directory ? reader.folderName : reader.fileName;
    if (!name || (!directory && reader.jsonText && !json)) continue;
    if (reader.kind == RecordingKind::JobDirectory && !trace::isRankEventDirectory(path)) continue;
    if (reader.recognises(path, directory)) return name;
  }
  return "";
}

}  // namespace shardscope::recordings
