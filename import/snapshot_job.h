// A PyTorch job's CUDA memory snapshots on their own, without torch.profiler traces: one per rank
// (DIR/rank-R.memory.pickle, or files named so; a single file named any way is rank 0), as a
// job records them for memory_viz. Each rank's memory over its allocator's whole history, in
// shardscope's roles from each allocation's stack (import/profiler_memory.h); no steps, collectives
// or compute, which only a trace holds. The ranks' times are their hosts' clocks (microseconds
// since the epoch): ranks of one host share it, ranks of other hosts are not aligned.
#pragma once

#include <string>
#include <vector>

#include "trace/trace_reader.h"

namespace shardscope::import {

// The rank a snapshot's file name says (rank-R.memory.pickle, or .memory.pickle.gz), or -1.
int snapshotFileRank(const std::string& path);

// Whether `dir` holds rank-R.memory.pickle files.
bool isCudaSnapshotDirectory(const std::string& dir);

// The snapshots in `dir`, or the files named. `error` for a file that is not a snapshot with a
// history (naming it and why), two files of one rank, several files not named for their ranks.
trace::LoadedTrace loadCudaSnapshotDirectory(const std::string& dir);
trace::LoadedTrace loadCudaSnapshotFiles(const std::vector<std::string>& paths);

}  // namespace shardscope::import
