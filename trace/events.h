// The one event vocabulary shared by the engine (which records) and the controller/UI (which read).
// Plain structs with a type tag; timestamps are nanoseconds on the host's steady clock (one clock
// for every rank on the host), sizes are bytes. Append-only: new kinds and roles go at the end so
// recorded streams stay readable.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::trace {

enum class EventKind : uint8_t {
  StepEnd,           // one training step finished on a rank: loss, step span
  RunInfo,           // a rank is up: world size, device/backend (text), parameter count
  RankError,         // a rank hit an error it can describe (text); it exits non-zero right after
  RunDone,           // a rank finished every step cleanly; droppedEvents: those it dropped
  Memory,            // an allocation (+bytes), a free (-bytes) or a re-attribution (fromRole -> role)
  Collective,        // one collective: op, label, bytes in/out, group size, issue/start/end, phase
  Compute,           // a compute span: step, forward/backward of a unit, optimizer step
  Dropped,           // droppedEvents: those a full buffer had to drop since the last Dropped event
  Group,             // a rank enters an event group (step_gate.h): op = GroupKind, text = its label;
                     // endNs: when it went on (> beginNs after a pause at the step gate), 0 while waiting
  ClockOffset,       // this rank's clock against rank 0's (per-rank files of a job across hosts), measured
                     // NTP-style through the rendezvous store: beginNs on this rank's clock was endNs on
                     // rank 0's; uncertaintyNs, text = host name (Note [clock alignment], rank_clock.h)
  CollectiveIssued,  // a rank issued a collective, sent before it can block: the Collective's fields
                     // known then (beginNs = issueNs, endNs 0) and its sequence number in its
                     // process group. Not part of the recording: it tells a hang's last collectives
                     // (trace/issued_collectives.h), and its Collective follows once it ends.
  CollectiveFailed,  // a collective the backend failed instead of completing (its timeout passed, a peer
                     // went away): the Collective's fields known at its issue (issueNs, op, text, bytes,
                     // ...), beginNs: when the rank saw it fail. Not a span: it never ended, and a span
                     // ending at the failure would read as a completed collective as long as the timeout.
};

// What a byte of memory is for. The timeline stacks these.
enum class MemoryRole : uint8_t {
  ParamShard,      // parameters this rank owns (under ddp: its full replica)
  ParamGathered,   // unsharded parameters, all-gathered for compute
  GradShard,       // reduced gradient of this rank's shard
  GradFull,        // unsharded gradients (ddp's .grad; FSDP before reduce-scatter)
  OptimizerState,  // optimizer moments and their temporaries
  Activation,      // activations and activation gradients
  CommBuffer,      // flat buffers a collective reads or writes (ddp buckets, rs input; a backend's
                   // staging: Note [staging buffers] in engine/recording/recorder.h)
  Other,           // input batches, scratch
  // Device lanes (GPU ranks only). They sit on top of the tensor roles above so the stack's top is
  // what the device holds for this process; they are not tensors and not counted as allocated.
  AllocatorCache,  // reserved by the caching allocator but holding no tensor right now
  DeviceRuntime,   // device memory PyTorch's allocator does not see: CUDA context, NCCL buffers
};
constexpr int kMemoryRoleCount = 10;
// Roles below this are tensor memory (what torch.cuda.memory_allocated counts); the rest are lanes.
constexpr int kTensorRoleCount = 8;
constexpr uint8_t kNoRole = 255;

enum class Phase : uint8_t { None, Forward, Backward, Optimizer };

// AllToAll, Send, Recv: read from PyTorch's own traces (MoE's expert exchange, pipeline stages);
// shardscope's strategies issue none of them.
enum class CollectiveOp : uint8_t { AllGather, ReduceScatter, AllReduce, Broadcast, Barrier, AllToAll, Send, Recv };
constexpr int kCollectiveOpCount = 8;
// Point to point: one peer, no group schedule.
inline bool isPointToPoint(CollectiveOp op) { return op == CollectiveOp::Send || op == CollectiveOp::Recv; }

// CopyToDevice, CopyToHost: --offload cpu's copies of a unit's shard to the device before its
// all-gather and of its reduced gradient shard back to pinned host memory. PinHostMemory: the
// allocation of that pinned memory (cudaHostAlloc, on the host; the first step's gradient shards
// and the shards at setup, the host allocator's cache after), timed by the host's clock.
enum class ComputeKind : uint8_t { Step, Forward, Backward, Optimizer, CopyToDevice, CopyToHost, PinHostMemory };
constexpr int kComputeKindCount = 7;

// Where a Memory event's bytes are. Device: the memory the rank computes in (its GPU's on a GPU
// rank, the process's heap on a CPU rank). Host: a GPU rank's host memory that holds training
// state under --offload cpu (pinned shards and gradients, the optimizer's state), drawn in a lane
// of its own beside the device's.
enum class MemorySpace : uint8_t { Device, Host };
// The roles --offload cpu keeps in host memory: what the tables, the estimator and the views list
// for the host.
inline constexpr MemoryRole kOffloadedRoles[] = {MemoryRole::ParamShard, MemoryRole::GradShard,
                                                 MemoryRole::OptimizerState};

// Which process group a collective ran in, as FSDP2's 2-D DeviceMesh (replicate, shard) names its
// dimensions: every rank (a 1-D mesh), this rank's shard group, or its replicate group (HSDP).
// Tensor: a --tp tensor group, N consecutive ranks; Data: under --tp, the ranks that hold the same
// tensor-parallel slice (rank % N, rank % N + N, ...), over which a 1-D strategy works. Pipe: under
// --pp P, the P ranks with the same place in their stages (rank % (world / P), + world / P, ...),
// between which activations and their gradients travel point to point.
enum class ProcessGroup : uint8_t { World, Shard, Replicate, Tensor, Data, Pipe };
constexpr int kProcessGroupCount = 6;

// Where a rank's work divides into event groups: the hook points of the real algorithms, where
// FSDP2's and DDP's hooks fire and where --step-gate stops. full_shard: all-gather of unit i,
// forward i, reshard i, ..., all-gather before backward, backward i, reduce-scatter i, optimizer;
// ddp: forward of each unit, backward up to a bucket ready, its all-reduce, ..., optimizer.
enum class GroupKind : uint8_t {
  StepStart,   // a training step begins (the only gate of --step-gate step)
  Collective,  // a collective is issued: an unshard's all-gather, a reduce-scatter, a bucket's all-reduce
  Forward,     // a unit's forward (in backward: its recomputation under activation checkpointing)
  Backward,    // a unit's backward
  Reshard,     // a unit's gathered parameters are freed
  Optimizer,   // the optimizer step
};
constexpr int kGroupKindCount = 6;

// More ranks than any recording shardscope writes or reads (a trace's pids, a job's rank files, a
// collector's hellos): 1024 GPUs at the most.
constexpr int kMaxRanks = 1024;

// More bytes than any device or host holds (1 PiB): a memory figure beyond it, either way, is a
// damaged file's, and the readers refuse it (summed as they came, such figures overflowed).
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 50;
inline bool plausibleMemoryBytes(int64_t bytes) { return bytes >= -kMaxMemoryBytes && bytes <= kMaxMemoryBytes; }

// Further from its clock's zero than any time a run or a profiler writes (2^62 ns, 146 years;
// Unix time is now about 2^60.6 ns): a time or a duration beyond it, either way, is a damaged
// file's, and the readers refuse it. Within it, a span's end less its begin, or its begin plus its
// duration, cannot overflow.
constexpr int64_t kMaxTimeNs = int64_t{1} << 62;
inline bool plausibleTimeNs(int64_t ns) { return ns > -kMaxTimeNs && ns < kMaxTimeNs; }
// The same of a time or duration in microseconds (a Chrome trace's), checked before it is
// converted: a double past int64's range converts to nothing defined, and NaN is no time. The
// microsecond of margin keeps the nanoseconds it converts to, rounded, within plausibleTimeNs.
inline bool plausibleTimeUs(double us) { return std::fabs(us) < static_cast<double>(kMaxTimeNs) / 1e3 - 1; }

// Memory events name the model unit their bytes belong to: a block index, -1 for the root (as
// model_layout.h's kRootUnit), or kNoUnit for memory of no one unit (buckets, flat buffers, data).
constexpr int32_t kNoUnit = INT32_MIN;

// A collective's step where it ran inside a recording's window but was issued before the window
// began (a torch.profiler trace's NCCL kernel whose launch the trace lacks): in no recorded step,
// and, since how many of those each rank's window caught differs, matched with no other rank's.
constexpr int32_t kIssuedBeforeRecording = -2;

struct Event {
  EventKind kind = EventKind::StepEnd;
  int32_t rank = 0;
  int32_t step = -1;               // -1 when not tied to a step; kIssuedBeforeRecording: see there
  int32_t microBatch = 0;          // Collective, Compute: 1..K within the step under gradient accumulation
                                   // over K micro-batches; 0 when the step is one batch or outside them
  int64_t beginNs = 0;             // Memory: when; Compute: span begin; Collective: start; CollectiveFailed: when
                                   // it failed
  int64_t endNs = 0;               // Compute, Collective, StepEnd: end
  int64_t issueNs = 0;             // Collective, CollectiveFailed: when the rank issued it (<= beginNs)
  int64_t bytes = 0;               // Memory: signed delta (or bytes moved when fromRole is set);
                                   // Collective: bytes this rank sends in
  int64_t bytesOut = 0;            // Collective: bytes this rank receives out
  int64_t ownPartBytes = 0;        // Collective, all-to-all: its own part, the bytes that stay on the rank
                                   // (its input split to itself); -1: not recorded, even splits assumed
  int64_t sequence = 0;            // CollectiveIssued: its number in its process group, from 1
  int64_t parameterCount = 0;      // RunInfo: the parameters the rank holds
  int64_t deviceMemoryBytes = 0;   // RunInfo: the GPU's memory (0 on CPU)
  int64_t peakFlopsPerSecond = 0;  // RunInfo: the GPU's measured matmul peak (0 on CPU or a shared GPU)
  int64_t droppedEvents = 0;       // Dropped: since the last Dropped; RunDone: in the whole run
  int64_t uncertaintyNs = 0;       // ClockOffset: half the best round trip; -1: not measured
  double loss = 0.0;               // StepEnd: global mean loss
  int64_t pausedNs = 0;            // StepEnd: of [beginNs, endNs], the time waited at the step gate
  int32_t worldSize = 0;           // RunInfo; Collective: group size
  int32_t peer = 0;                // Collective, send or recv: the peer's rank in the group; -1: not recorded
  int32_t unit = kNoUnit;          // Memory: the model unit the bytes belong to
  uint8_t role = 0;                // Memory: MemoryRole
  uint8_t fromRole = kNoRole;      // Memory: re-attribution source role
  uint8_t space = 0;               // Memory: MemorySpace
  uint8_t phase = 0;               // Collective, Compute: Phase
  uint8_t op = 0;                  // Collective: CollectiveOp; Compute: ComputeKind; Group: GroupKind
  uint8_t processGroup = 0;        // Collective: ProcessGroup it ran in (worldSize is that group's size)
  uint8_t sizeUnknown = 0;         // Collective: 1 where its trace recorded no size (a kernel known by its
                                   // name alone): its bytes 0 are no measurement
  std::string text;                // Collective: "unit" or "unit|implementation" for an op built from
                                   // others; Compute: unit; RunInfo: device; RankError: message
};

const char* eventKindName(EventKind kind);
const char* memoryRoleName(MemoryRole role);
const char* phaseName(Phase phase);
const char* collectiveOpName(CollectiveOp op);
const char* computeKindName(ComputeKind kind);
const char* groupKindName(GroupKind kind);
const char* processGroupName(ProcessGroup group);  // "world" | "shard" | "replicate" | "tensor" | "data" | "pipe"
// The ranks of `rank`'s `group` of `groupSize` among `worldRanks`, in the group's own order, on the
// (replicate, shard) mesh of engine/comm/process_mesh.h: a shard group is a row of the grid, a replicate
// group a column (ranks r % S, r % S + S, ...). On the (data, tensor) mesh of --tp a tensor group is a
// row and a data group a column, in the same way. With both (a hybrid strategy under --tp, as
// torchtitan's (dp_replicate, dp_shard, tp) mesh) the shard and replicate groups are laid out among
// the ranks with rank's place in its tensor group of `tensorRanks`: each member is a data rank.
// Under --pp (`pipeRanks` > 1) the world is P blocks of world / P consecutive ranks, one per stage,
// each with that mesh inside; a pipe group is a column across the blocks (rank % (world / P), ...).
std::vector<int> processGroupMembers(ProcessGroup group, int rank, int groupSize, int worldRanks, int tensorRanks = 1,
                                     int pipeRanks = 1);
// The tensor groups' size in a recording's collectives (their group size), 1 where none ran.
int tensorRanksOf(const Event& collective, int seenSoFar);
// The pipe groups' size likewise (--pp's P), 1 where none ran.
int pipeRanksOf(const Event& collective, int seenSoFar);
// processGroupMembers' inverse: the group whose members these are among `worldRanks` (World for
// all of them; a row of the grid, Shard, or a column, Replicate, unless `preferred` names the same
// ranks: Tensor and Data on the (data, tensor) mesh), or nothing for ranks no mesh row or column
// holds (e.g. {0, 3} of 4).
std::optional<ProcessGroup> processGroupOf(const std::vector<int>& members, int worldRanks,
                                           std::optional<ProcessGroup> preferred = std::nullopt);
std::optional<EventKind> eventKindFromName(const std::string& name);

// Nanoseconds on the steady clock of this host; all ranks on one host share it.
int64_t nowNs();

// nccl-tests' bandwidths for a collective of `bytes` (its "size": the all-reduce buffer, the
// all-gather output, the reduce-scatter input) over `seconds` among `ranks`:
// algbw = bytes / seconds; busbw = algbw * factor, factor 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather and reduce-scatter, 1 for broadcast.
double algbwBytesPerSecond(int64_t bytes, double seconds);
// A forward compute span in the backward phase: activation checkpointing running a block's forward
// again, with a graph, just before its backward.
bool isRecomputation(const Event& compute);
// A compute span of --offload cpu's traffic with the host: a shard's copy to the device, a
// gradient's copy to the host, or the pinning of host memory for them. Drawn apart from compute.
bool isOffloadSpan(const Event& compute);
// What a trace (and an NVTX range, engine/recording/nvtx_ranges.h) calls a span: "step 3", "forward
// blocks.1", "recompute blocks.1", "optimizer.step"; a collective: "all_gather blocks.1", with
// " [shard]" or " [replicate]" when it ran in a sub-group (HSDP reduces a unit in both).
std::string computeSpanName(const Event& compute);
std::string collectiveSpanName(const Event& collective);
// That size for a Collective event: bytesOut for all-gather, bytes (in) otherwise.
int64_t collectiveSizeBytes(const Event& collective);

// A Collective's text is "unit", or "unit|implementation" when the op was built from others.
std::string collectiveText(const std::string& unit, const std::string& implementation, CollectiveOp op);
std::string collectiveUnit(const Event& collective);
std::string collectiveImplementation(const Event& collective);  // the op's own name if native
// The same from a span's fields (trace/spans.h's packed records share them).
bool isRecomputation(ComputeKind kind, Phase phase);
bool isOffloadKind(ComputeKind kind);
std::string computeSpanName(ComputeKind kind, Phase phase, int step, const std::string& unit);
std::string collectiveSpanName(CollectiveOp op, ProcessGroup group, const std::string& text);
std::string collectiveUnit(const std::string& text);
std::string collectiveImplementation(CollectiveOp op, const std::string& text);
double busbwFactor(CollectiveOp op, int ranks);

// A step's duration without what it waited at the step gate (StepEnd), in nanoseconds.
int64_t activeStepNs(const Event& stepEnd);
// "root" for -1, "blocks.<i>" for i >= 0, "" for kNoUnit (StagedModel::unitName's names).
std::string unitName(int32_t unit);
// The inverse, for names read back from a file: kNoUnit when the name is no unit.
int32_t unitFromName(const std::string& name);

}  // namespace shardscope::trace
