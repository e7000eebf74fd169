// PyTorch's Flight Recorder dumps, read into each rank's collective log (trace/collective_log.h).
// Flight Recorder keeps a ring of each rank's last collectives (TORCH_FR_BUFFER_SIZE entries) and
// dumps it per rank: on a watchdog timeout to TORCH_FR_DUMP_TEMP_FILE's prefix + rank, or when the
// job asks, with torch._C._distributed_c10d._dump_fr_trace() (a pickle) or _dump_fr_trace_json().
// Version 2.x dumps, from NCCL or gloo ranks. A dump says nothing of its rank: it comes from the
// digits that end the file's name (fr-3, nccl_trace_rank_3, fr-3.json), as PyTorch's analyzer
// reads it.
#pragma once

#include <string>
#include <vector>

#include "trace/collective_log.h"

namespace shardscope::import {

// The most one dump is read to: a full buffer of 20,000 entries with their stacks is far less.
constexpr size_t kMaxFlightRecorderBytes = size_t{512} << 20;

struct LoadedFlightRecord {
  trace::CollectiveLogs logs;
  std::string error;  // why nothing was read, naming the file and what to do
  std::string notes;  // what was read with something missing, a line each
};

// Whether `path` holds a dump, by its first 4 KiB: a pickle naming pg_config or collective_seq_id,
// or a JSON object naming comm_lib_version or collective_seq_id and not a profiler trace's keys
// (Kineto's distributedInfo has a pg_config too).
bool looksLikeFlightRecorderDump(const std::string& path);
// Whether the directory holds at least one dump (its files, not its subdirectories).
bool isFlightRecorderDirectory(const std::string& dir);

// The dumps of one job: a directory's, or the files named. Two files of one rank are refused,
// naming both.
LoadedFlightRecord loadFlightRecorderDumps(const std::vector<std::string>& paths);

// The digits that end a file's name, before .json, .pkl or .pickle: its rank; -1 when none do.
int rankFromDumpName(const std::string& path);

}  // namespace shardscope::import
