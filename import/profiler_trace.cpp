#include "import/profiler_trace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "files/user_json.h"
#include "config/strategies.h"
#include "import/clock_alignment.h"
#include "import/cuda_snapshot.h"
#include "import/profiler_collectives.h"
#include "import/profiler_compute.h"
#include "import/profiler_kernel_collectives.h"
#include "import/profiler_pipeline.h"
#include "trace/format.h"
#include "import/profiler_memory.h"
#include "import/profiler_roles.h"
#include "import/profiler_trace_index.h"
#include "trace/rank_clock.h"
#include "trace/rank_event_files.h"
#include "import/snapshot_job.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace fs = std::filesystem;
using profiler::RankTrace;
using profiler::Span;
using profiler::startsWith;

namespace {

// The PyTorch whose traces the tests record (tests/pytorch_profiler_traces.py) and whose FSDP2
// annotations the roles follow.
constexpr const char* kTestedTorch = "2.11";

// Whether the file's name (not its directory) ends in `plain` or in `plain` gzipped.
bool fileNameEndsIn(const std::string& path, const std::string& plain) {
  const std::string file = fs::path(path).filename().string();
  auto endsWith = [&](const std::string& tail) {
    return file.size() > tail.size() && file.compare(file.size() - tail.size(), tail.size(), tail) == 0;
  };
  return endsWith(plain) || endsWith(plain + ".gz");
}

// The rank a file's name gives, as launchers and handlers name them: rank-3.pt.trace.json,
// rank3.json, trace_rank_3.json.gz; -1 for none (tensorboard_trace_handler's HOST_PID.TIME names).
int rankInFileName(const std::string& path) {
  static const std::regex rank(R"((?:^|[^A-Za-z0-9])rank[-_]?([0-9]{1,4})(?:[^0-9]|$))", std::regex::icase);
  std::smatch match;
  const std::string file = fs::path(path).filename().string();
  if (!std::regex_search(file, match, rank)) return -1;
  const int r = std::stoi(match[1].str());
  return r < kMaxRanks ? r : -1;
}

// The torch.profiler traces in `dir`, told by their content (profiler_trace.h), each with the rank
// its name gives (or -1: its distributedInfo says). Of a trace kept plain and gzipped, the plain one.
std::vector<std::pair<int, fs::path>> traceFiles(const std::string& dir, std::error_code& error) {
  std::map<std::string, fs::path> byStem;  // the name less ".gz"
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string path = it->path().string();
    // Named as one (its content's errors are then named), or told by its content.
    const bool named = isProfilerTraceFileName(path);
    if (!named && !(fileNameEndsIn(path, ".json") && looksLikeProfilerTrace(path))) continue;
    const std::string stem =
        it->path().extension() == ".gz" ? it->path().stem().string() : it->path().filename().string();
    auto& kept = byStem[stem];
    if (kept.empty() || kept.extension() == ".gz") kept = it->path();
  }
  std::vector<std::pair<int, fs::path>> out;
  for (const auto& [stem, path] : byStem) out.emplace_back(rankInFileName(path.string()), path);
  return out;
}

// What python/shardscope_record noted beside a rank's trace (rank-R.shardscope.json), read once
// per rank: the PyTorch that wrote it, and what the rank held when recording began, per device.
struct RecorderNotes {
  std::string torchVersion;  // "" when not noted
  nlohmann::json held;       // "held_when_recording_began": {"cpu" | "cuda": {role: bytes}}, or null

  // For the device whose memory the trace shows; none when not counted.
  std::optional<HeldAtStart> heldOn(bool device) const {
    const char* key = device ? "cuda" : "cpu";
    if (!held.is_object() || !held.contains(key) || !held[key].is_object()) return std::nullopt;
    const auto& roles = held[key];
    HeldAtStart out;
    for (int r = 0; r < kTensorRoleCount; ++r) {
      const char* name = memoryRoleName(static_cast<MemoryRole>(r));
      if (roles.contains(name) && roles[name].is_number_integer())
        out.bytes[r] = std::max<int64_t>(roles[name].get<int64_t>(), 0);
    }
    return out;
  }
};

RecorderNotes recorderNotesOf(const fs::path& dir, int rank) {
  RecorderNotes out;
  std::string error;
  const auto text = files::readFileText((dir / ("rank-" + std::to_string(rank) + ".shardscope.json")).string(), error,
                                        files::kMaxConfigBytes);
  if (!text) return out;
  const auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return out;
  if (json.contains("torch_version") && json["torch_version"].is_string()) out.torchVersion = json["torch_version"];
  if (json.contains("held_when_recording_began")) out.held = json["held_when_recording_began"];
  return out;
}

struct ReadNotes {
  int firstStep = -1, lastStep = -1;  // rank 0's ProfilerStep numbers
  int stepsFromOptimizer = 0;         // rank 0's steps where its trace had no ProfilerStep#N
  int stepsOnDevice = -1;             // rank 0's, on a GPU trace: 1 timed by their GPU-side copies, 0 by the host's
  int64_t wholeTraceStepNs = 0;       // rank 0's trace marks no step: its length, read as one step
  // Rank 0's trace as its exporter wrote it: without process and thread metadata or schemaVersion,
  // and how many of its events' kinds were told from their args.
  bool noMetadata = false, noSchema = false;
  int64_t categoriesFromArgs = 0;
  CollectiveNotes collectives;  // counts summed over the ranks, rank 0's where it says
  int64_t skippedEvents = 0;
  MemoryNotes memory;                      // rank 0's
  std::vector<int> snapshotRanks;          // ranks whose memory came from their CUDA memory snapshots
  std::string unusedSnapshots;             // snapshots not read, each with why
  std::vector<std::string> unrankedFiles;  // files whose rank neither distributedInfo nor the name gave
  std::vector<int> inferredPipelineRanks;  // ranks whose pipeline actions were read from their order
  int pipelineGroupSize = 0;               // the pipeline group's, where a trace's pg_config names one
};

// What rank 0's trace says of how it was written and where its steps came from.
void notesOfRankZero(const RankTrace& trace, ReadNotes& notes) {
  notes.skippedEvents = trace.skippedEvents;
  notes.noMetadata = !trace.hasMetadata;
  notes.noSchema = !trace.namesSchema;
  notes.categoriesFromArgs = trace.categoriesFromArgs;
  if (trace.stepsFromWholeTrace) notes.wholeTraceStepNs = trace.steps.front().end - trace.steps.front().begin;
}

// Each step, where the device ran it when the trace says so (profiler::stepWindow).
void readSteps(const RankTrace& trace, std::vector<Event>& out) {
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    Event e;
    e.kind = EventKind::StepEnd;
    e.rank = trace.rank;
    e.step = trace.steps[i].number - trace.steps.front().number;
    std::tie(e.beginNs, e.endNs) = profiler::stepWindow(trace, i);
    out.push_back(e);
  }
}

// A rank's memory: from its CUDA memory snapshot when one lies beside its trace
// (rank-R.memory.pickle), else from the trace's [memory] events. A snapshot that cannot be read is
// named in the note with why, and the trace's events are shown instead.
void readRankMemory(const fs::path& dir, const RankTrace& trace, const RecorderNotes& noted, std::vector<Event>& events,
                    ReadNotes& notes) {
  MemoryNotes rankNotes;
  MemoryNotes& memoryNotes = trace.rank == 0 ? notes.memory : rankNotes;
  const std::string snapshotPath = cudaSnapshotFileName(dir.string(), trace.rank);
  std::error_code missing;
  if (fs::exists(snapshotPath, missing)) {
    CudaSnapshot snapshot;
    std::string problem = readCudaSnapshot(snapshotPath, traceMemoryDevice(trace), snapshot);
    if (problem.empty()) problem = snapshotMissesSteps(trace, snapshot);
    if (problem.empty()) {
      readSnapshotMemory(trace, snapshot, noted.heldOn(/*device=*/true), events, memoryNotes);
      notes.snapshotRanks.push_back(trace.rank);
      return;
    }
    notes.unusedSnapshots += "'" + snapshotPath + "' " + problem + ": rank " + std::to_string(trace.rank) +
                             "'s memory is the profiler's [memory] events instead\n";
  }
  readProfilerMemory(trace, noted.heldOn(tracesDeviceMemory(trace)), events, memoryNotes);
}

// What went wrong reading a trace, as its caller says it after the file's name: the exceptions a
// damaged trace's reading throws.
template <typename Read>
std::string guarded(const fs::path& path, const RankTrace& trace, Read read) {
  try {
    return read();
  } catch (const nlohmann::json::exception&) {  // a field of an unexpected kind that no check named
    return "has a malformed event: one of its fields holds another kind of value than torch.profiler writes";
  } catch (const std::bad_alloc&) {
    std::error_code unknown;
    const auto size = fs::file_size(path, unknown);
    return "could not be held in memory (" + std::to_string(trace.c10dOps.size() + trace.memory.size()) +
           " of its collectives and memory events read, of a " + std::to_string(unknown ? 0 : size >> 20) +
           " MiB file): open fewer ranks at once, or on a machine with more memory";
  } catch (const std::exception& ex) {  // a step name that is not one
    return "has a malformed event (" + std::string(ex.what()) + ")";
  }
}

// One rank's file indexed (profiler::indexTrace) and its rank settled; "" or why it could not be
// read. The rank is the one its name says (`namedRank`), which its distributedInfo must agree
// with; or, for a file named otherwise (-1), the one its distributedInfo says: its recorder's notes
// (`noted`, read by the caller for a named file) are read then.
std::string indexRankTrace(const fs::path& path, int namedRank, RecorderNotes& noted, RankTrace& trace,
                           ReadNotes& notes) {
  if (auto problem = profiler::indexTrace(path.string(), trace); problem.kind != TraceProblemKind::None) {
    const bool cutShort = problem.kind == TraceProblemKind::NotJson || problem.kind == TraceProblemKind::Truncated;
    if (cutShort)
      problem.message +=
          ": record it again, letting the profiler finish (export_chrome_trace writes the whole file at the end)";
    return problem.message;
  }
  if (namedRank >= 0 && trace.rank >= 0 && trace.rank != namedRank) {
    return "says it is rank " + std::to_string(trace.rank) + " (distributedInfo) but is named for rank " +
           std::to_string(namedRank);
  }
  if (namedRank < 0 && trace.rank < 0) {
    // One process (one GPU, the commonest trace there is), or a job profiled before
    // init_process_group: rank 0 of a world of 1, said in a note, not refused.
    trace.rank = 0;
    trace.world = std::max(trace.world, 1);
    notes.unrankedFiles.push_back(path.filename().string());
  }
  if (trace.rank >= kMaxRanks) {
    return "says it is rank " + std::to_string(trace.rank) + "; shardscope draws up to " + std::to_string(kMaxRanks) +
           " ranks";
  }
  const int fileRank = namedRank >= 0 ? namedRank : trace.rank;
  trace.rank = fileRank;
  if (namedRank < 0) noted = recorderNotesOf(path.parent_path(), fileRank);
  return "";
}

// An indexed rank's events, in time order: its steps, collectives, compute, pipeline marks and
// memory.
std::string readIndexedRank(const fs::path& path, const RecorderNotes& noted, const RankTrace& trace,
                            std::vector<Event>& events, ReadNotes& notes) {
  if (trace.rank == 0 && !trace.steps.empty()) {
    notes.firstStep = trace.steps.front().number;
    notes.lastStep = trace.steps.back().number;
    if (trace.stepsFromOptimizer) notes.stepsFromOptimizer = static_cast<int>(trace.steps.size());
    if (!trace.computeKernels.empty() && !trace.stepsFromOptimizer && !trace.stepsFromWholeTrace)
      notes.stepsOnDevice = trace.stepsOnDevice ? 1 : 0;
  }
  if (trace.rank == 0) notesOfRankZero(trace, notes);
  readSteps(trace, events);
  // The host's compute spans, read once: the compute lane's, and where each collective ran.
  const std::vector<Event> host = hostComputeSpans(trace);
  const KernelContext kernels(trace, host);
  readProfilerCollectives(kernels, events, notes.collectives);
  readKernelsLaunchedBeforeWindow(kernels, events, notes.collectives);
  readCommunicationKernels(kernels, events, notes.collectives);
  readProfilerCompute(trace, host, events);
  if (readPipelineMarks(trace, events)) notes.inferredPipelineRanks.push_back(trace.rank);
  notes.pipelineGroupSize = static_cast<int>(trace.pipelineGroup.size());
  readRankMemory(path.parent_path(), trace, noted, events, notes);
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return "";
}

// What the note says of the ranks' memory: where it came from, and what no record names.
std::string describeMemoryNotes(const ReadNotes& notes) {
  std::string out;
  const MemoryNotes& memory = notes.memory;
  if (!notes.snapshotRanks.empty()) {
    const std::string ranks = formatRanks(notes.snapshotRanks);
    out += "GPU memory of rank " + ranks +
           " from the CUDA allocator's snapshot (rank-R.memory.pickle): each "
           "allocation's role from the stack that made it, what was held when the recorded steps began from the "
           "allocator's history\n";
  }
  out += notes.unusedSnapshots;
  const std::string before = memory.fromSnapshot ? "the snapshot's history began" : "the profiler started";
  std::string countedRoles;
  for (int r = 0; memory.counted && r < kTensorRoleCount; ++r) {
    if (memory.counted->bytes[r] > 0) {
      countedRoles += (countedRoles.empty() ? "" : ", ") + std::string(memoryRoleName(static_cast<MemoryRole>(r))) +
                      " " + std::to_string(memory.counted->bytes[r]) + " B";
    }
  }
  if (!countedRoles.empty()) {
    out += "held before " + before +
           ", as shardscope_record counted the model's and optimizer's tensors (rank 0: " + countedRoles +
           "): shown from the first recorded step" +
           (memory.fromSnapshot ? ", no more than the allocator held from before its history" : "") + "\n";
  }
  if (memory.hostMemory) {
    out += std::string("host memory: the profiler counts it only from its start, so what else was held before") +
           (countedRoles.empty() ? " (the model, the optimizer's state; pass model= and optimizer= to "
                                   "shardscope_record.start to count them)"
                                 : "") +
           " is not shown\n";
  }
  if (memory.heldAtStart > 0 && !memory.hostMemory) {
    const int64_t unnamed = memory.heldAtStart - (memory.counted ? memory.counted->total() : 0);
    if (unnamed > 0) {
      out +=
          "rank 0 held " + std::to_string(unnamed) +
          (memory.fromSnapshot ? " bytes allocated before the snapshot's history began that no recorded role names"
                               : " bytes when the profiler started that no recorded role names (allocated before it)") +
          ": shown as other\n";
    }
  }
  out += describeUnnamedBytes(memory);
  if (memory.unknownFrees > 0) {
    out += "rank 0: " + std::to_string(memory.unknownFrees) + " frees of blocks allocated before " + before +
           ": taken from other\n";
  }
  return out;
}

// "symm_mem::multimem_all_reduce_ (3), vllm::... (1)": names with how many of each.
std::string countedNames(const std::map<std::string, int64_t>& counts) {
  std::string text;
  for (const auto& [name, n] : counts) text += (text.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
  return text;
}

// What the notes say of rank 0's collectives (the offGrid and unnamedGroup counts are all ranks').
std::string describeCollectiveNotes(const CollectiveNotes& c) {
  std::string out;
  if (c.fromBackend + c.fromParams + c.fromKernel > 0) {
    out += "rank 0: " + std::to_string(c.fromBackend + c.fromParams + c.fromKernel) +
           " collectives with no c10d op in the trace, read from " + std::to_string(c.fromBackend) +
           " backend spans (nccl:*, gloo:*: PyTorch 1.x), " + std::to_string(c.fromParams) +
           " record_param_comms and " + std::to_string(c.fromKernel) + " NCCL kernels alone\n";
  }
  if (c.offGrid > 0) {
    out += std::to_string(c.offGrid) +
           " collectives (all ranks) in process groups that are no row or column of the job's rank grid (NCCL names "
           "their ranks): drawn with their size, but left out of the stragglers, which match a collective across its "
           "group's ranks\n";
  }
  if (c.unnamedGroup > 0) {
    out += std::to_string(c.unnamedGroup) +
           " collectives (all ranks) name no process group, and the job made groups smaller than the world "
           "(distributedInfo's pg_config; Gloo records none): costed as the world's, and not matched rank to rank, "
           "so the stragglers and the clocks do not use them (record on NCCL, whose records name the group)\n";
  }
  if (c.untyped > 0) {
    out += std::to_string(c.untyped) +
           " collectives whose element type the trace does not name: their bytes counted at 4 per element\n";
  }
  if (!c.outsideC10d.empty()) {
    out +=
        "rank 0: collectives outside c10d, recognised by their own ops' or kernels' names and drawn as theirs, in "
        "gold: " +
        countedNames(c.outsideC10d) + "; their group is not recorded, nor a kernel's size\n";
  }
  if (c.launchedBeforeWindow > 0) {
    out += "rank 0: " + std::to_string(c.launchedBeforeWindow) +
           " collective kernels ran inside the trace's window but were launched before it began (the step before "
           "the first recorded one; their host records are not in the trace): drawn, and not counted in the recorded "
           "steps\n";
  }
  if (!c.unrecognisedKernels.empty()) {
    out +=
        "rank 0: kernels whose names suggest communication, launched outside any collective's record, seen but "
        "not recognised as a collective (not counted, drawn as nothing): " +
        countedNames(c.unrecognisedKernels) + "\n";
  }
  if (c.unreadOps > 0) {
    out += "rank 0: " + std::to_string(c.unreadOps) +
           " c10d ops that are not all-gather, reduce-scatter, all-reduce, broadcast, barrier, all-to-all, send or "
           "recv (gather, scatter, reduce, ...) are not drawn\n";
  }
  return out;
}

std::string describeNotes(const ReadNotes& notes) {
  std::string out;
  for (const auto& file : notes.unrankedFiles) {
    out += file +
           " names no rank (no distributedInfo, no rank-R in its name): read as one process, rank 0 of a "
           "world of 1\n";
  }
  if (notes.firstStep > 0) {
    out += "the profiler recorded the job's steps " + std::to_string(notes.firstStep) + " to " +
           std::to_string(notes.lastStep) + " (ProfilerStep#N), shown as steps 0 to " +
           std::to_string(notes.lastStep - notes.firstStep) + "\n";
  }
  if (notes.stepsFromOptimizer > 0) {
    out += "rank 0's trace marks no steps (no ProfilerStep#N: the job did not call the profiler's step()): its " +
           std::to_string(notes.stepsFromOptimizer) +
           " steps are taken from its optimizer's, each from the end of the one before (the first from the trace's "
           "first span) to the end of its own Optimizer.step; call prof.step() after each step for the job's own\n";
  }
  if (notes.wholeTraceStepNs > 0) {
    out +=
        "rank 0's trace marks no steps (no ProfilerStep#N, no Optimizer.step: an inference job, or one that "
        "did not call the profiler's step()): the whole trace, " +
        formatMilliseconds(static_cast<double>(notes.wholeTraceStepNs) / 1e9) +
        ", is read as one step, so its collectives and compute are counted; call prof.step() after each step for "
        "the job's own\n";
  }
  if (notes.noMetadata || notes.noSchema) {
    out += std::string("rank 0's trace was written without ") +
           (notes.noMetadata && notes.noSchema ? "process or thread metadata and without schemaVersion"
            : notes.noMetadata                 ? "process or thread metadata"
                                               : "schemaVersion") +
           ": its threads and streams are told from its events' own pid and tid" +
           (notes.categoriesFromArgs > 0 ? ", and " + std::to_string(notes.categoriesFromArgs) +
                                               " events with no category from their args (a kernel's device and "
                                               "stream, a launch's correlation, a host op's External id)"
                                         : "") +
           "\n";
  }
  if (notes.stepsOnDevice == 1) {
    out +=
        "steps timed where the GPU ran them: by each ProfilerStep#N's GPU-side copy (gpu_user_annotation), not "
        "by the host's span, which runs ahead of the device\n";
  } else if (notes.stepsOnDevice == 0) {
    out +=
        "steps timed by the host's ProfilerStep#N spans: the trace has no GPU-side copy of them "
        "(gpu_user_annotation, written by newer PyTorch), and the host runs ahead of the device\n";
  }
  if (!notes.inferredPipelineRanks.empty()) {
    auto ranks = notes.inferredPipelineRanks;
    std::sort(ranks.begin(), ranks.end());
    out += "rank " + formatRanks(ranks) +
           ": the pipeline schedule names no action (PyTorch's Schedule1F1B records none): each forward and "
           "backward is read from the order the rank ran its operators, autograd's functions and its sends and "
           "receives in, numbered in that order\n";
  }
  out += describeMemoryNotes(notes);
  out += describeCollectiveNotes(notes.collectives);
  if (notes.skippedEvents > 0) {
    out += "rank 0: " + std::to_string(notes.skippedEvents) + " memory events without their fields skipped\n";
  }
  return out;
}

// What the job ran, read from its collectives: shardscope's name for the closest strategy. A unit
// gathered again for backward reshards after forward (FSDP's FULL_SHARD); gathered once a step,
// it keeps its parameters through backward (SHARD_GRAD_OP).
config::StrategyKind strategyFromCollectives(const std::vector<Event>& events) {
  std::map<std::pair<int, std::string>, int> gathers;  // (step, unit) -> all-gathers
  for (const auto& e : events) {
    if (e.kind == EventKind::Collective && static_cast<CollectiveOp>(e.op) == CollectiveOp::AllGather && e.step >= 0) {
      ++gathers[{e.step, collectiveUnit(e)}];
    }
  }
  int most = 0;
  for (const auto& g : gathers) most = std::max(most, g.second);
  return config::strategyWithUnitGathers(most);
}

// "1 all_gather, 73 all_reduce outside c10d": what the rank ran, as counted.
std::string collectiveCounts(const std::map<CollectiveOp, int>& counts, const std::map<CollectiveOp, int>& outside) {
  std::string text;
  for (const auto& [op, n] : counts)
    text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + collectiveOpName(op);
  for (const auto& [op, n] : outside)
    text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + collectiveOpName(op) + " outside c10d";
  return text.empty() ? "no collectives recorded" : text;
}

// How the view's title describes the job, never past its evidence: a strategy's name only where
// its collectives are there (all-gathers and reduce-scatters for FSDP's, all-reduces for DDP's), a
// job whose spans show forwards and no backward as inference, and otherwise what it ran, counted.
std::string jobDescription(const std::vector<Event>& events, config::StrategyKind strategy) {
  std::map<CollectiveOp, int> counts, outside;  // outside: by ops or kernels of their own (not c10d's)
  bool computed = false, backward = false;
  for (const auto& e : events) {
    // Those of no recorded step (launched before the trace's window) are not the job's counts.
    const bool counted = e.kind == EventKind::Collective && e.step >= 0;
    const bool ownOp = counted && collectiveImplementation(e).find("::") != std::string::npos;
    if (counted) ++(ownOp ? outside : counts)[static_cast<CollectiveOp>(e.op)];
    if (e.kind != EventKind::Compute) continue;
    const auto kind = static_cast<trace::ComputeKind>(e.op);
    computed |= kind == trace::ComputeKind::Forward || kind == trace::ComputeKind::Backward;
    backward |= kind == trace::ComputeKind::Backward || e.phase == static_cast<uint8_t>(trace::Phase::Backward);
  }
  if (computed && !backward) return "inference (forwards, no backward): " + collectiveCounts(counts, outside);
  // An MoE's all-to-alls or a pipeline's sends beside the data-parallel ones are named after them.
  std::string others;
  for (CollectiveOp op : {CollectiveOp::AllToAll, CollectiveOp::Send, CollectiveOp::Recv}) {
    if (counts.count(op)) others += (others.empty() ? "" : ", ") + std::string(collectiveOpName(op));
  }
  const std::string also = others.empty() ? "" : ", with " + others;
  const bool reduceScatters = counts.count(CollectiveOp::ReduceScatter) > 0;
  if (strategy == config::StrategyKind::FullShard && reduceScatters)
    return "sharded, gathered again for backward (FULL_SHARD-like)" + also;
  if (strategy == config::StrategyKind::ShardGradOp && reduceScatters)
    return "sharded, gathered once a step (SHARD_GRAD_OP-like)" + also;
  if (counts.count(CollectiveOp::AllReduce) && !counts.count(CollectiveOp::AllGather) && !reduceScatters) {
    return "ddp-like: all-reduces" + also;
  }
  const bool dataParallelOps =
      counts.count(CollectiveOp::AllGather) || reduceScatters || counts.count(CollectiveOp::AllReduce);
  if (!counts.empty() && !dataParallelOps) {
    std::string names;
    for (const auto& [op, n] : counts) names += (names.empty() ? "" : ", ") + std::string(collectiveOpName(op));
    return "not data-parallel: " + names;
  }
  if (counts.empty() && outside.empty()) return "no collectives recorded";
  return "ran " + collectiveCounts(counts, outside);
}

}  // namespace

std::string profilerTraceFileName(const std::string& dir, int rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".pt.trace.json")).string();
}

bool isProfilerTraceDirectory(const std::string& dir) {
  std::error_code error;
  return fs::is_directory(dir, error) && !traceFiles(dir, error).empty();
}

namespace {

struct RankFile {
  fs::path path;
  int namedRank = -1;  // the rank its name says (rank-R.pt.trace.json, rank3.json), or -1
};

// One file read: its events, the rank and world it says, what its recorder noted, what the
// reading noted; or why it could not be read. Its index, while its events are read from it.
struct RankRead {
  std::string error;
  std::vector<Event> events;
  int rank = -1, world = 0;
  RecorderNotes noted;
  ReadNotes notes;
  std::unique_ptr<RankTrace> trace;
};

// The PyTorch the package noted beside the trace: a major version this reader was not written for
// is refused before reading a named file (its annotations and op names may differ), and once its
// rank is known for one named otherwise. "" where it was 2.x or not noted.
std::string unsupportedTorch(const RankFile& file, const RecorderNotes& noted, int rank) {
  if (noted.torchVersion.empty() || noted.torchVersion.rfind("2.", 0) == 0) return "";
  return "'" + file.path.string() + "' was written by PyTorch " + noted.torchVersion + " (rank-" +
         std::to_string(rank) +
         ".shardscope.json); this shardscope reads torch.profiler traces of PyTorch 2.x (tested with " + kTestedTorch +
         "): record the job under PyTorch 2.x.";
}

// The first half of a file's reading: its index, and its rank.
void indexRankFile(const RankFile& file, RankRead& out) {
  if (file.namedRank >= 0) out.noted = recorderNotesOf(file.path.parent_path(), file.namedRank);
  if (out.error = unsupportedTorch(file, out.noted, file.namedRank); !out.error.empty()) return;
  out.trace = std::make_unique<RankTrace>();
  RankTrace& trace = *out.trace;
  const std::string problem =
      guarded(file.path, trace, [&] { return indexRankTrace(file.path, file.namedRank, out.noted, trace, out.notes); });
  const std::string& torch = out.noted.torchVersion;
  if (!problem.empty()) {
    out.error =
        "'" + file.path.string() + "' " + problem + (torch.empty() ? "" : " (written by PyTorch " + torch + ")") + ".";
  } else {
    out.error = unsupportedTorch(file, out.noted, trace.rank);
  }
  out.rank = trace.rank;
  out.world = trace.world;
  if (!out.error.empty()) out.trace.reset();  // `trace` with it
}

// The second: its events from its index, which is then dropped.
void readIndexedFile(const RankFile& file, RankRead& out) {
  if (!out.trace) return;
  const RankTrace& trace = *out.trace;
  const std::string problem =
      guarded(file.path, trace, [&] { return readIndexedRank(file.path, out.noted, trace, out.events, out.notes); });
  const std::string& torch = out.noted.torchVersion;
  if (!problem.empty()) {
    out.error =
        "'" + file.path.string() + "' " + problem + (torch.empty() ? "" : " (written by PyTorch " + torch + ")") + ".";
  }
  out.trace.reset();
}

// Every file read, as many parts at once as there are cores: each file's index, then its events.
// Indexing comes first, so that a core whose files are done reads another's events while the last
// index is made (three ranks on two cores keep both busy).
std::vector<RankRead> readRankFiles(const std::vector<RankFile>& files) {
  std::vector<RankRead> reads(files.size());
  const size_t threads = std::min<size_t>(files.size(), std::max(1U, std::thread::hardware_concurrency()));
  std::mutex lock;
  size_t nextIndex = 0;
  std::deque<size_t> indexed;  // files whose events are to be read
  auto work = [&] {
    for (;;) {
      size_t file = 0;
      bool index = false;
      {
        std::lock_guard<std::mutex> hold(lock);
        // As many indexes held at once as there are threads, at most, and one more being made.
        if (nextIndex < files.size() && indexed.size() < threads) {
          std::tie(file, index) = std::pair{nextIndex++, true};
        } else if (!indexed.empty()) {
          file = indexed.front();
          indexed.pop_front();
        } else {
          return;  // what is left is in hand; whoever indexes a file reads it or hands it on
        }
      }
      try {  // what escapes the readers' own guard (memory for a file's index) ends that file, not the process
        if (!index) {
          readIndexedFile(files[file], reads[file]);
          continue;
        }
        indexRankFile(files[file], reads[file]);
      } catch (const std::exception& e) {
        reads[file].error = "'" + files[file].path.string() + "' could not be read (" + e.what() + ")";
        reads[file].trace.reset();
        if (!index) continue;
      }
      std::lock_guard<std::mutex> hold(lock);
      indexed.push_back(file);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& helper : helpers) helper.join();
  return reads;
}

// What each file's reading noted, as one: rank 0's steps and memory, the others' counts summed.
void mergeNotes(ReadNotes& into, ReadNotes&& from, int rank) {
  if (rank == 0) {
    into.firstStep = from.firstStep;
    into.lastStep = from.lastStep;
    into.stepsFromOptimizer = from.stepsFromOptimizer;
    into.stepsOnDevice = from.stepsOnDevice;
    into.wholeTraceStepNs = from.wholeTraceStepNs;
    into.noMetadata = from.noMetadata;
    into.noSchema = from.noSchema;
    into.categoriesFromArgs = from.categoriesFromArgs;
    into.skippedEvents = from.skippedEvents;
    into.memory = std::move(from.memory);
  }
  into.collectives += from.collectives;
  into.snapshotRanks.insert(into.snapshotRanks.end(), from.snapshotRanks.begin(), from.snapshotRanks.end());
  into.unusedSnapshots += from.unusedSnapshots;
  into.unrankedFiles.insert(into.unrankedFiles.end(), from.unrankedFiles.begin(), from.unrankedFiles.end());
  into.pipelineGroupSize = std::max(into.pipelineGroupSize, from.pipelineGroupSize);
  into.inferredPipelineRanks.insert(into.inferredPipelineRanks.end(), from.inferredPipelineRanks.begin(),
                                    from.inferredPipelineRanks.end());
}

// Each file read, its rank known (import/profiler_trace.h), then merged on one clock.
LoadedTrace loadRankFiles(const std::vector<RankFile>& files) {
  LoadedTrace out;
  std::vector<std::vector<Event>> events;
  std::vector<fs::path> readFrom;    // per rank: the file it came from
  std::vector<std::string> torchOf;  // per rank: the PyTorch its recorder noted, or ""
  int world = 0;
  ReadNotes notes;
  auto reads = readRankFiles(files);
  for (size_t i = 0; i < files.size(); ++i) {
    RankRead& read = reads[i];
    if (!read.error.empty()) {
      out.error = read.error;
      return out;
    }
    const auto rank = static_cast<size_t>(read.rank);
    if (rank >= events.size()) {
      events.resize(rank + 1);
      readFrom.resize(rank + 1);
      torchOf.resize(rank + 1);
    }
    mergeNotes(notes, std::move(read.notes), read.rank);
    if (!readFrom[rank].empty()) {
      const bool unranked = !notes.unrankedFiles.empty();
      out.error =
          "'" + readFrom[rank].string() + "' and '" + files[i].path.string() + "' are both rank " +
          std::to_string(rank) +
          (unranked ? " (a file that names no rank, by distributedInfo or a rank-R in its name, is rank 0)" : "") +
          ": name one trace per rank";
      return out;
    }
    events[rank] = std::move(read.events);
    readFrom[rank] = files[i].path;
    torchOf[rank] = read.noted.torchVersion;
    // The job's world as its ranks say it: a missing last rank is a rank without a trace.
    if (read.world <= kMaxRanks) world = std::max(world, read.world);
  }
  const int ranks = std::max(world, static_cast<int>(events.size()));
  events.resize(static_cast<size_t>(ranks));
  readFrom.resize(static_cast<size_t>(ranks));
  std::vector<int> missing;
  for (int r = 0; r < ranks; ++r) {
    if (readFrom[static_cast<size_t>(r)].empty()) missing.push_back(r);
  }
  const bool mixed = notes.collectives.unnamedGroup > 0;
  alignRankClocks(events, out.clocks, out.rankClocks, /*worldCollectivesKnown=*/!mixed);
  out.recording.reset(ranks);
  out.recording.setWorldCollectivesMixed(mixed);
  for (const auto& rank : events) {
    for (const auto& e : rank) out.recording.add(e);
  }
  out.config.world = ranks;
  out.config.batch = 0;  // the job's batch and model are not in its trace: no rates are derived
  // The job as the first rank given says it (rank 0's file may not be among them).
  const auto first = static_cast<size_t>(
      std::find_if(readFrom.begin(), readFrom.end(), [](const fs::path& p) { return !p.empty(); }) - readFrom.begin());
  out.config.steps = static_cast<int>(out.recording.rank(static_cast<int>(first)).steps.size());
  out.jobLabel = "a PyTorch job's own model (not in the trace)";
  out.source = "torch.profiler";
  out.config.strategy = strategyFromCollectives(events[first]);
  const auto pipeline = recognisePipeline(events, notes.pipelineGroupSize, out.config);
  out.title = "a PyTorch job (torch.profiler), " + (pipeline ? *pipeline + ", " : std::string()) +
              jobDescription(events[first], out.config.strategy);
  const std::string torch = torchOf[first];
  out.device = "recorded by torch.profiler" + (torch.empty() ? std::string() : " (PyTorch " + torch + ")");
  if (!missing.empty()) out.note += "no trace for rank " + formatRanks(missing) + "\n";
  out.untracedRanks = missing;
  if (std::all_of(events.begin(), events.end(), [](const std::vector<Event>& rank) {
        return std::none_of(rank.begin(), rank.end(), [](const Event& e) { return e.kind == EventKind::Memory; });
      })) {
    out.note += "the traces hold no [memory] events (recorded with profile_memory=False): memory is not recorded\n";
  }
  out.note += describeNotes(notes);
  return out;
}

}  // namespace

LoadedTrace loadProfilerTraces(const std::string& dir) {
  std::error_code error;
  const auto named = traceFiles(dir, error);
  if (error || named.empty()) {
    LoadedTrace out;
    out.error = "'" + dir +
                "' holds no torch.profiler trace (a JSON file that starts with its schemaVersion): record "
                "a job with python/shardscope_record, prof.export_chrome_trace or tensorboard_trace_handler";
    return out;
  }
  std::vector<RankFile> files;
  for (const auto& [rank, path] : named) files.push_back({path, rank});
  return loadRankFiles(files);
}

namespace {

// A CUDA memory snapshot among the files named: read with its rank's trace when it lies beside one
// of them as rank-R.memory.pickle (and then nothing more to do here), else why not.
std::string snapshotNamedAlone(const std::string& path, const std::vector<std::string>& traces) {
  if (!isCudaSnapshotFileName(path)) return "";
  const fs::path p(path);
  const bool besideATrace = std::any_of(
      traces.begin(), traces.end(), [&](const std::string& t) { return fs::path(t).parent_path() == p.parent_path(); });
  if (snapshotFileRank(path) >= 0 && besideATrace) return "";
  return "'" + path +
         "' is a CUDA memory snapshot: beside torch.profiler traces, shardscope reads one with its rank's "
         "trace, named rank-R.memory.pickle in the trace's directory (R: the rank): rename or move it there, or open "
         "the snapshots on their own";
}

}  // namespace

LoadedTrace loadProfilerTraceFiles(const std::vector<std::string>& paths) {
  if (paths.empty()) {
    LoadedTrace out;
    out.error = "no torch.profiler traces named: name each rank's rank-R.pt.trace.json, or their directory";
    return out;
  }
  std::vector<std::string> traces;
  std::copy_if(paths.begin(), paths.end(), std::back_inserter(traces),
               [](const std::string& p) { return !isCudaSnapshotFileName(p); });
  if (traces.empty()) return loadCudaSnapshotFiles(paths);  // snapshots alone: memory only
  for (const auto& path : paths) {
    if (auto problem = snapshotNamedAlone(path, traces); !problem.empty()) {
      LoadedTrace out;
      out.error = problem;
      return out;
    }
  }
  std::vector<RankFile> files;
  for (const auto& path : traces) files.push_back({fs::path(path), rankInFileName(path)});
  return loadRankFiles(files);
}

LoadedTrace loadJobDirectory(const std::string& dir) {
  if (isProfilerTraceDirectory(dir)) return loadProfilerTraces(dir);
  return isCudaSnapshotDirectory(dir) ? loadCudaSnapshotDirectory(dir) : loadRankEventFiles(dir);
}

bool isCudaSnapshotFileName(const std::string& path) { return fileNameEndsIn(path, ".pickle"); }

bool isProfilerTraceFileName(const std::string& path) { return fileNameEndsIn(path, ".pt.trace.json"); }

bool looksLikeProfilerTrace(const std::string& path) {
  if (isCudaSnapshotFileName(path)) return false;
  std::string error;
  const auto head = files::readFileText(path, error, files::kTraceHeadBytes, /*prefix=*/4096);
  if (!head) return false;
  // Kineto writes it first: {"schemaVersion": 1, "deviceProperties": ..., "traceEvents": [...]}.
  // An exporter that writes the events alone is known by them: Kineto's categories and ids.
  const size_t open = head->find_first_not_of(" \t\r\n");
  const auto has = [&](const char* text) { return head->find(text) != std::string::npos; };
  return open != std::string::npos && (*head)[open] == '{' &&
         (has("\"schemaVersion\"") || (has("\"traceEvents\"") && (has("\"cpu_op\"") || has("\"External id\""))));
}

}  // namespace shardscope::import
