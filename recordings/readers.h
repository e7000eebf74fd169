// The table of readers: every kind of recording shardscope opens, each with how it is recognised
// (a folder by the names of its files, a file by its first bytes and its name) and how it is
// loaded. Perfetto's trace processor works the same way: one entry, a registry of readers, each
// telling its format from the content. The order of the table is the order they are asked in:
// the first that recognises a path reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::recordings {

enum class RecordingKind : uint8_t {
  ProfilerJob,     // torch.profiler's Chrome traces of a PyTorch job (a folder, or the files)
  FlightRecorder,  // PyTorch's Flight Recorder dumps (a folder, or the files)
  CudaSnapshots,   // torch.cuda.memory._snapshot() pickles (a folder, or the files)
  JobDirectory,    // a job's --trace-dir: shardscope's per-rank event files
  PerfettoTrace,   // shardscope's --trace FILE.pftrace
  ChromeTrace,     // shardscope's --trace FILE.json
  Summary,         // shardscope's --summary, of a run or a compare
};

struct Reader {
  RecordingKind kind;
  const char* folderName;  // what a folder of it is called in a listing; nullptr: never a folder
  const char* fileName;    // what one file of it is called; nullptr: never a file
  // Whether it reads `path` (a folder when `directory`). Cheap: names, and a file's first bytes
  // (a summary's last 256 KiB, where its schema is written).
  bool (*recognises)(const std::string& path, bool directory);
  // Whether several files of it are one recording (a job's per-rank files), read together.
  bool filesMakeOneRecording;
  // JSON text: a listing asks it only of .json and .gz files, as reading every file's head (gzip
  // inflated) would slow a folder of thousands; opening a file asks it whatever the file's name.
  bool jsonText;
};

// The readers, in the order they are asked.
const std::vector<Reader>& readers();

// The first reader that recognises `path`; nullopt when none does.
std::optional<RecordingKind> recognise(const std::string& path);

const Reader& readerOf(RecordingKind kind);

// What `path` would open as, for a listing ("a job's --trace-dir", "torch.profiler traces",
// "Perfetto trace", "summary"); "" when no reader recognises it.
std::string describePath(const std::string& path);

}  // namespace shardscope::recordings
