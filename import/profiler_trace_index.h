// One rank's torch.profiler trace, its events sorted into what import/profiler_trace.cpp reads from
// them: the steps, c10d's ops, the backends' spans, every CPU-side span per thread with its parent
// (so the spans in force at a time are a binary search and a walk up, not a scan of the thread),
// and the memory events in time order. Only the host's rows are taken as spans (cpu_op,
// user_annotation, python_function): a GPU trace repeats the annotations on its streams'
// rows (gpu_user_annotation), which must not count twice.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "files/chrome_trace_stream.h"

namespace shardscope::import {
// The Chrome trace stream (files/chrome_trace_stream.h), which import's readers name as their own.
using files::ChromeArgs;
using files::ChromeEvent;
using files::ChromeTraceHandlers;
using files::streamChromeTrace;
using files::TraceProblem;
using files::TraceProblemKind;
}  // namespace shardscope::import

namespace shardscope::import::profiler {

struct Span {
  std::string name;
  int64_t begin = 0, end = 0;  // ns, on the profiler's clock (+1: never 0)
  int64_t thread = 0;          // its process and thread together
  // Its args, kept only for the spans whose args a reader reads (c10d's ops, the backends' spans,
  // record_param_comms, NCCL kernels); null for the rest.
  const nlohmann::json* args = nullptr;
};

// A [memory] instant: an allocation (bytes > 0) or a free (bytes < 0) of the block at `addr`.
struct MemoryRecord {
  int64_t at = 0;      // ns (nanos of its ts)
  int64_t thread = 0;  // as Span::thread
  int64_t bytes = 0, addr = 0;
  int64_t totalAllocated = 0;  // the allocator's total after it; `bytes` when the event omits it
  int deviceType = 0;          // 0: the host, 1: a CUDA device
  int deviceId = -1;
};

// A thread's spans by begin, and for each the index of the innermost span around it (-1: none).
struct ThreadSpans {
  std::vector<Span> spans;
  std::vector<int> parent;
};

struct Step {
  int number = 0;  // N of ProfilerStep#N
  int64_t begin = 0, end = 0;
  int64_t optimizerBegin = 0;  // its Optimizer.step's begin (its forward and backward end there), or its end
  // Where the device ran it: the GPU's own copy of ProfilerStep#N (gpu_user_annotation, over its
  // streams); 0 where the trace has none. The host's span runs ahead of the device's work.
  int64_t deviceBegin = 0, deviceEnd = 0;
};

// A CUDA kernel launch on the host (cudaLaunchKernel and its kin), by the id that correlates it
// with the kernel it started.
struct Launch {
  int64_t thread = 0;
  int64_t at = 0;  // ns
  int64_t correlation = 0;
};

struct GpuKernel {
  int64_t begin = 0, end = 0;  // ns, on the device (Kineto puts it on the host's clock)
  int64_t correlation = -1;
};

// A GPU kernel outside NCCL whose name suggests communication (symm_mem's multimem all-reduce, an
// expert-parallel library's all-to-all or dispatch), with its launch's correlation id (-1: none).
struct CommKernel {
  std::string name;
  int64_t begin = 0, end = 0;
  int64_t correlation = -1;
};

struct RankTrace {
  int rank = -1, world = 0;     // from distributedInfo, when the trace has it
  bool listsSubGroups = false;  // distributedInfo's pg_config names a group smaller than the world
  // The ranks of its pipeline group, ascending, where pg_config names one: a device mesh's "pp"
  // dimension ("mesh_pp", torchtitan's), or a group whose description says "pipe". Empty: none.
  std::vector<int> pipelineGroup;
  int64_t mainThread = -1;  // the thread of the ProfilerStep annotations
  // No ProfilerStep#N (the job never called the profiler's step()): the steps are its optimizer
  // steps, each from the end of the one before to the end of its own, numbered from 0.
  bool stepsFromOptimizer = false;
  bool stepsOnDevice = false;  // every step has its GPU-side copy: their times are the device's
  // No step marked at all (no ProfilerStep#N, no Optimizer.step: an inference job, or a trace cut
  // from one): the whole trace, from its first event to its last, is one step, so that what it ran
  // is counted as a step's.
  bool stepsFromWholeTrace = false;
  // How its exporter wrote it: with process and thread metadata events ("ph": "M"), with
  // schemaVersion; events whose category was told from their args (none written); whether any
  // event is of Kineto's kinds (a host op, a kernel, a launch).
  bool hasMetadata = false, namesSchema = false, kinetoShaped = false;
  int64_t categoriesFromArgs = 0;
  int64_t baseTimeNs = 0;            // the epoch time (ns) the trace's times count from
  std::vector<Step> steps;           // in time order
  std::vector<Span> c10dOps;         // c10d::..., in time order
  std::vector<Span> backendSpans;    // gloo:... / nccl:..., in time order
  std::vector<Span> outsideC10dOps;  // collectives by their own ops (symm_mem::..., a framework's), in time order
  std::map<int64_t, ThreadSpans> threads;
  std::vector<MemoryRecord> memory;  // in time order
  // GPU traces: the host's kernel launches in time order, and the NCCL kernels (ncclDevKernel_*,
  // ncclKernel_*) by their launch's correlation id, timed on the device (Kineto puts the GPU's
  // times on the host's clock).
  std::vector<Launch> launches;
  std::map<int64_t, Span> ncclKernels;
  // The GPU's other kernels (its compute), by begin, each with its launch's correlation id (-1:
  // none named): on a GPU the host's spans say when work was launched, these when it ran.
  std::vector<GpuKernel> computeKernels;
  std::vector<CommKernel> commKernels;  // by begin; not among computeKernels
  int64_t skippedEvents = 0;            // events that could not be read (a field of another type)
  std::deque<nlohmann::json> args;      // what the spans' args point to
};

int64_t nanos(double micros);

bool startsWith(std::string_view s, std::string_view prefix);
// A collective backend's own span: "nccl:all_reduce", "gloo:all_gather", ...
bool isBackendSpanName(std::string_view name);
// A host op that runs a collective outside c10d, by its own name: a namespaced op (symm_mem::,
// a serving framework's own, ...) whose name says all-reduce, all-gather, reduce-scatter or
// all-to-all, and that is none of PyTorch's own (c10d::, its functional collectives, aten::, FSDP's,
// autograd::).
bool isOutsideC10dCollectiveName(std::string_view name);
// A kernel that is not NCCL's whose name suggests communication: it says all-reduce, all-gather,
// reduce-scatter or all-to-all, or names symmetric memory's or NVSHMEM's, or an expert-parallel
// library's (DeepEP, pplx), or cross-device or peer-to-peer traffic.
bool isCommunicationKernelName(std::string_view name);
// A kernel's name without its return type, template arguments and parameters:
// "void c10d::symmetric_memory::multimem_all_reduce_kernel<...>(...)" ->
// "c10d::symmetric_memory::multimem_all_reduce_kernel".
std::string shortKernelName(std::string_view name);

// Reads the trace at `path` (import/chrome_trace_stream.h: streamed, never held whole) and sorts
// its events into `out`; what was wrong, when the file is not a trace this reader knows (a schema
// it does not read is Refused).
TraceProblem indexTrace(const std::string& path, RankTrace& out);

// The spans of `thread` in force at `t`, innermost first.
std::vector<const Span*> spansAt(const RankTrace& trace, int64_t thread, int64_t t);
// Whether a backend's span (gloo:send) began inside a c10d op of its thread that had returned by
// `t`: the transfer still completing while the thread runs other work, which is not the span's.
bool outlivedItsOp(const RankTrace& trace, const Span& backend, int64_t t);

// Whether any thread is inside a span whose name starts with `prefix` at `t` (a record with no
// thread of its own, such as a CUDA memory snapshot's entry, placed by its time).
bool anyThreadInside(const RankTrace& trace, int64_t t, const std::string& prefix);

// The NCCL kernel that a launch inside `op` (on its thread, between its begin and end) started,
// or null: where a collective ran on the GPU.
const Span* ncclKernelOf(const RankTrace& trace, const Span& op);

// The step holding `t`, or null.
const Step* stepAt(const RankTrace& trace, int64_t t);

// The rank's pipeline stage where its schedule names none (ScheduleGPipe, Schedule1F1B: one stage a
// rank): its index in its pipeline group where the trace names one, else its rank (a job of
// pipeline ranks only).
int singleStageOf(const RankTrace& trace);

// The recording's step number for a time: 0 for the first recorded step, -1 outside every step.
int recordedStepAt(const RankTrace& trace, int64_t t);
// Step i's window as the recording takes it: where the device ran it when the trace says so
// (stepsOnDevice: from its GPU-side copy's begin to the next step's, the last to the later of its
// device and host ends), else the host's span.
std::pair<int64_t, int64_t> stepWindow(const RankTrace& trace, size_t i);

// Whether `t` on `thread` is in a step's forward or backward: on the training thread, before its
// optimizer step.
bool inForwardOrBackward(const RankTrace& trace, int64_t thread, int64_t t);

}  // namespace shardscope::import::profiler
