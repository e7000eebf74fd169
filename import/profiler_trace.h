// A PyTorch job's own records, per rank: the Chrome traces torch.profiler writes
// (DIR/rank-R.pt.trace.json, e.g. by python/shardscope_record under torchrun), read into the
// recording shardscope draws for its own runs, on one clock.
//   steps        ProfilerStep#N annotations
//   collectives  c10d's ops (c10d::_allgather_base_, c10d::allreduce_, ...): the op, the message
//                sizes from their input dims and element type, from when the rank issued them to
//                the end of the backend's span that ran them (gloo:all_gather, ...); the unit from
//                FSDP2's annotation around them ("FSDP::all_gather (2)" -> unit 2)
//   compute      FSDP2's forward and backward of each unit (between its pre_ and post_ hooks),
//                DistributedDataParallel.forward, Optimizer.step
//   memory       the profiler's [memory] events (profile_memory=True), each allocation given the
//                role its annotation or op says (import/profiler_roles.h); what none says is
//                "other", and so is what was held before the profiler started
// Ranks of one host share the profiler's clock; ranks of other hosts are aligned on their
// collectives' ends, else their messages (import/clock_alignment.h), and the note says by how
// much. See Note [clock alignment] in trace/rank_clock.h.
#pragma once

#include <string>
#include <vector>

#include "trace/trace_reader.h"

namespace shardscope::import {

// DIR/rank-R.pt.trace.json
std::string profilerTraceFileName(const std::string& dir, int rank);

// Whether `dir` holds at least one torch.profiler trace (looksLikeProfilerTrace: a .json or .json.gz
// file of any name).
bool isProfilerTraceDirectory(const std::string& dir);

// The ranks' traces merged. `error` for a file that is not a torch.profiler trace (not JSON,
// truncated, no traceEvents, a schema this reader does not know), naming the file; `note` for
// what was read with something missing or assumed (a rank without a file, frees of blocks
// allocated before the profiler started, collectives whose element type the trace does not name).
trace::LoadedTrace loadProfilerTraces(const std::string& dir);

// The same from files named on the command line or in the app (one per rank, named any way, as
// torch.profiler's tensorboard_trace_handler names them HOST_PID.TIME.pt.trace.json): each file's
// rank from its distributedInfo, or from a rank in its name (rank-R, rankR, rank_R); a file that
// says neither is one process, rank 0 of a world of 1 (said in the note). Two files of one rank are
// refused naming both. A CUDA memory snapshot (*.pickle) among them
// is read with its rank's trace when it lies beside one as rank-R.memory.pickle, and refused,
// saying how to place it, otherwise; snapshots named alone open on their own
// (import/snapshot_job.h).
trace::LoadedTrace loadProfilerTraceFiles(const std::vector<std::string>& paths);

// A job's directory: its torch.profiler traces when it holds them, else its CUDA memory snapshots
// when it holds only those, else shardscope's own per-rank files (worker --trace-dir, or listen's).
trace::LoadedTrace loadJobDirectory(const std::string& dir);

// Whether a file's name is a CUDA memory snapshot's (*.pickle, or gzipped *.pickle.gz).
bool isCudaSnapshotFileName(const std::string& path);

// Whether a file's name is torch.profiler's (*.pt.trace.json, or .gz).
bool isProfilerTraceFileName(const std::string& path);

// Whether a file is a torch.profiler trace by its content, whatever its name (trace.json from
// prof.export_chrome_trace, HOST_PID.TIME.pt.trace.json from tensorboard_trace_handler, gzipped or
// not): a JSON object whose first 4 KiB hold Kineto's "schemaVersion", or (an exporter that wrote
// the events alone) a traceEvents array with Kineto's "cpu_op" or "External id". shardscope's own
// --trace starts with its "displayTimeUnit" and has none of them.
bool looksLikeProfilerTrace(const std::string& path);

}  // namespace shardscope::import
