#include "import/profiler_trace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "files/user_json.h"
#include "config/strategies.h"
#include "import/cuda_snapshot.h"
#include "trace/format.h"
#include "import/profiler_memory.h"
#include "import/profiler_roles.h"
#include "import/profiler_trace_index.h"
#include "trace/rank_clock.h"
#include "trace/rank_event_files.h"
#include "import/snapshot_job.h"

namespace shardscope::trace {

namespace fs = std::filesystem;
using profiler::RankTrace;
using profiler::Span;

namespace {

// The profiler's trace is parsed whole (a tree of about 8 times the file): past this, refused
// with what to do rather than run out of memory.
constexpr size_t kMaxProfilerTraceBytes = size_t{512} << 20;

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

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

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

std::optional<CollectiveOp> collectiveOpOf(const std::string& c10dName) {
  const std::string op = c10dName.substr(6);
  if (op == "allreduce_" || op == "allreduce_coalesced_") return CollectiveOp::AllReduce;
  if (op == "_allgather_base_" || op == "allgather_" || op == "allgather_into_tensor_coalesced_")
    return CollectiveOp::AllGather;
  if (op == "_reduce_scatter_base_" || op == "reduce_scatter_" || op == "reduce_scatter_tensor_coalesced_") {
    return CollectiveOp::ReduceScatter;
  }
  if (op == "broadcast_") return CollectiveOp::Broadcast;
  if (op == "barrier") return CollectiveOp::Barrier;
  if (op == "alltoall_base_" || op == "alltoall_") return CollectiveOp::AllToAll;
  if (op == "send") return CollectiveOp::Send;
  if (op == "recv_" || op == "recv_any_source_") return CollectiveOp::Recv;
  return std::nullopt;
}

int64_t elementBytes(const std::string& type) {
  if (type == "float" || type == "int") return 4;
  if (type == "double" || type == "long int" || type == "long") return 8;
  if (type == "c10::BFloat16" || type == "c10::Half" || type == "short") return 2;
  if (type == "unsigned char" || type == "signed char" || type == "bool" || type == "c10::Float8_e4m3fn") return 1;
  return 0;  // unknown (a TensorList says none)
}

// Elements of an "Input Dims" entry: a tensor's dims, or a (nested) list of tensors' dims.
int64_t elementsOf(const nlohmann::json& dims) {
  if (!dims.is_array() || dims.empty()) return 0;
  if (dims[0].is_array()) {
    int64_t total = 0;
    for (const auto& d : dims) total += elementsOf(d);
    return total;
  }
  int64_t n = 1;
  for (const auto& d : dims) n *= d.is_number_integer() ? d.get<int64_t>() : 0;
  return n;
}

std::string firstInputType(const Span& s) {
  if (!s.args || !s.args->contains("Input type") || !(*s.args)["Input type"].is_array() ||
      (*s.args)["Input type"].empty() || !(*s.args)["Input type"][0].is_string()) {
    return "";
  }
  return (*s.args)["Input type"][0].get<std::string>();
}

// The op's elements in and out. The ops that gather, scatter or exchange take (outputs, inputs), as
// tensors (_base_, coalesced) or lists of them (allgather_, reduce_scatter_, alltoall_); the others
// one list of tensors, reduced, sent or received in place.
std::pair<int64_t, int64_t> elementsInOut(const Span& op, CollectiveOp kind) {
  if (!op.args || !op.args->contains("Input Dims") || !(*op.args)["Input Dims"].is_array()) return {0, 0};
  const auto& dims = (*op.args)["Input Dims"];
  if (dims.empty()) return {0, 0};
  const bool outputsFirst =
      (kind == CollectiveOp::AllGather || kind == CollectiveOp::ReduceScatter || kind == CollectiveOp::AllToAll) &&
      dims.size() >= 2;
  const int64_t first = elementsOf(dims[0]);
  return outputsFirst ? std::pair{elementsOf(dims[1]), first} : std::pair{first, first};
}

// What NCCL's process group records of a collective (PyTorch's record_param_comms span inside the
// c10d op, its arguments repeated on the NCCL kernel): the message sizes, element type and group
// size, which a trace recorded without shapes (record_shapes=False) has nowhere else. Gloo's
// process group records none of it.
struct CommParams {
  int64_t in = 0, out = 0;          // elements
  int64_t width = 0;                // bytes per element; 0: not named
  int groupSize = 0;                // 0: not named
  std::vector<int64_t> inSplits;    // all-to-all: rows of the input for each rank of the group; empty: even
  std::vector<int64_t> groupRanks;  // the group's global ranks, in its order; empty: not named
};

// "[3, 5]", as the profiler records a list of counts; empty for "[]" or anything else.
std::vector<int64_t> integerList(const nlohmann::json& value) {
  if (!value.is_string()) return {};
  const auto list = files::parseUserJson(value.get<std::string>()).value;  // a trace's text: untrusted
  if (!list.is_array()) return {};
  std::vector<int64_t> out;
  for (const auto& n : list) {
    if (!n.is_number_integer() || n.get<int64_t>() < 0) return {};
    out.push_back(n.get<int64_t>());
  }
  return out;
}

int64_t dtypeBytes(const std::string& dtype) {
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Double" || dtype == "Long") return 8;
  if (dtype == "BFloat16" || dtype == "Half" || dtype == "Short") return 2;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || startsWith(dtype, "Float8")) return 1;
  return 0;
}

std::optional<CommParams> commParamsFrom(const nlohmann::json* args) {
  if (!args || !args->is_object() || !args->contains("In msg nelems")) return std::nullopt;
  auto number = [&](const char* key) {
    return args->contains(key) && (*args)[key].is_number_integer() ? std::max<int64_t>((*args)[key].get<int64_t>(), 0)
                                                                   : 0;
  };
  CommParams p;
  p.in = number("In msg nelems");
  p.out = number("Out msg nelems");
  p.groupSize = static_cast<int>(std::min<int64_t>(number("Group size"), kMaxRanks));
  if (args->contains("dtype") && (*args)["dtype"].is_string())
    p.width = dtypeBytes((*args)["dtype"].get<std::string>());
  if (args->contains("In split size")) p.inSplits = integerList((*args)["In split size"]);
  if (args->contains("Process Group Ranks")) p.groupRanks = integerList((*args)["Process Group Ranks"]);
  return p;
}

std::optional<CommParams> commParamsOf(const RankTrace& trace, const Span& op) {
  const auto thread = trace.threads.find(op.thread);
  if (thread != trace.threads.end()) {
    const auto& spans = thread->second.spans;
    auto it =
        std::lower_bound(spans.begin(), spans.end(), op.begin, [](const Span& s, int64_t t) { return s.begin < t; });
    for (; it != spans.end() && it->begin <= op.end; ++it) {
      if (it->name == "record_param_comms") return commParamsFrom(it->args);
    }
  }
  const Span* kernel = profiler::ncclKernelOf(trace, op);
  return kernel ? commParamsFrom(kernel->args) : std::nullopt;
}

// Which backend span ran which c10d op: for each family, the first unused one from the op's issue
// on (gloo runs a reduce-scatter as an all-reduce of the whole input: "gloo:all_reduce").
class BackendMatch {
 public:
  explicit BackendMatch(const RankTrace& trace) : trace_(trace), used_(trace.backendSpans.size(), false) {}

  const Span* of(const Span& op, CollectiveOp kind) {
    size_t& from = next_[static_cast<int>(kind)];
    for (size_t i = from; i < trace_.backendSpans.size(); ++i) {
      const Span& b = trace_.backendSpans[i];
      if (used_[i] || b.begin < op.begin || !ranIt(b.name, kind)) continue;
      used_[i] = true;
      if (i == from) ++from;
      return &b;
    }
    return nullptr;
  }

 private:
  static bool ranIt(const std::string& name, CollectiveOp kind) {
    auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    switch (kind) {
      case CollectiveOp::AllGather:
        return has("all_gather");
      case CollectiveOp::Broadcast:
        return has("broadcast");
      case CollectiveOp::Barrier:
        return has("barrier");
      case CollectiveOp::AllToAll:
        return has("all_to_all");
      case CollectiveOp::Send:
        return has("send");
      case CollectiveOp::Recv:
        return has("recv");
      case CollectiveOp::ReduceScatter:
        return has("reduce_scatter") || has("all_reduce");
      case CollectiveOp::AllReduce:
        return has("all_reduce");
    }
    return false;
  }
  const RankTrace& trace_;
  std::vector<bool> used_;
  size_t next_[kCollectiveOpCount] = {};
};

struct ReadNotes {
  int firstStep = -1, lastStep = -1;  // rank 0's ProfilerStep numbers
  int stepsFromOptimizer = 0;         // rank 0's steps where its trace had no ProfilerStep#N
  int64_t untypedCollectives = 0;     // element type not in the trace: counted as 4-byte
  int64_t unreadOps = 0;              // c10d ops shardscope has no collective for (gather, scatter, ...)
  int64_t skippedEvents = 0;
  MemoryNotes memory;                      // rank 0's
  std::vector<int> snapshotRanks;          // ranks whose memory came from their CUDA memory snapshots
  std::string unusedSnapshots;             // snapshots not read, each with why
  std::vector<std::string> unrankedFiles;  // files whose rank neither distributedInfo nor the name gave
};

// A send's or recv's peer, its rank in the op's group, from the values the profiler records with
// shapes: c10d::send(tensors, group, peer, tag) and c10d::recv_(tensors, group, peer, tag); -1 for
// c10d::recv_any_source_(tensors, group, tag), which names none, or where none is recorded.
int64_t peerOf(const Span& op) {
  if (op.name == "c10d::recv_any_source_" || !op.args || !op.args->contains("Concrete Inputs")) return -1;
  const auto& values = (*op.args)["Concrete Inputs"];
  if (!values.is_array() || values.size() < 3 || !values[2].is_string()) return -1;
  const std::string peer = values[2].get<std::string>();
  if (peer.empty() || peer.size() > 9 || peer.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(peer);
}

// "to rank 1", "from rank 0", "from any rank".
std::string peerText(const Span& op, CollectiveOp kind, int64_t peer) {
  const std::string way = kind == CollectiveOp::Send ? "to " : "from ";
  if (peer >= 0) return way + "rank " + std::to_string(peer);
  return way + (op.name == "c10d::recv_any_source_" ? "any rank" : "a rank not recorded");
}

// An all-to-all's own part: the bytes of its input it sends to itself, which is also what its
// output gets from itself, so it sends its input less this and receives its output less this. From
// the input's split sizes the profiler records (NCCL's record_param_comms "In split size"; gloo's
// c10d::alltoall_base_(output, input, group, output_splits, input_splits, ...) concrete inputs) and
// this rank's place in the group. -1 where either is not recorded, or the splits are even ("[]").
int64_t ownPartBytes(const RankTrace& trace, const Span& op, const std::optional<CommParams>& params, const Event& e) {
  std::vector<int64_t> splits = params ? params->inSplits : std::vector<int64_t>{};
  if (splits.empty() && op.args && op.args->contains("Concrete Inputs")) {
    const auto& values = (*op.args)["Concrete Inputs"];
    if (values.is_array() && values.size() > 4) splits = integerList(values[4]);
  }
  // This rank's split: by its place among the group's ranks where NCCL names them; else (gloo names
  // none) only in the world's group, a split per rank: a sub-group's has fewer, and stays unknown.
  int index = -1;
  if (params && !params->groupRanks.empty()) {
    const auto at = std::find(params->groupRanks.begin(), params->groupRanks.end(), trace.rank);
    if (at != params->groupRanks.end() && params->groupRanks.size() == splits.size()) {
      index = static_cast<int>(at - params->groupRanks.begin());
    }
  } else if (static_cast<int>(splits.size()) == trace.world && e.worldSize == trace.world) {
    index = trace.rank;  // the world's group: its ranks in order
  }
  const int64_t rows = std::accumulate(splits.begin(), splits.end(), int64_t{0});
  if (index < 0 || rows <= 0 || e.bytes % rows != 0) return -1;
  return splits[static_cast<size_t>(index)] * (e.bytes / rows);
}

Event collectiveEvent(const RankTrace& trace, const Span& op, CollectiveOp kind, const Span* backend,
                      ReadNotes& notes) {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = trace.rank;
  e.op = static_cast<uint8_t>(kind);
  e.issueNs = e.beginNs = op.begin;
  e.endNs = std::max(op.end, backend ? backend->end : op.end);
  // On a GPU the host only launches it: it ran when its NCCL kernel ran.
  if (const Span* kernel = profiler::ncclKernelOf(trace, op)) {
    e.beginNs = std::max(kernel->begin, op.begin);
    e.endNs = std::max(kernel->end, e.beginNs);
  }
  e.step = profiler::recordedStepAt(trace, op.begin);
  e.worldSize = trace.world;
  auto [in, out] = elementsInOut(op, kind);
  int64_t width = elementBytes(firstInputType(op));
  if (width == 0 && backend) width = elementBytes(firstInputType(*backend));
  // An older PyTorch records no shapes for a TensorList argument (allreduce_): its backend's span
  // ("nccl:all_reduce") names the tensor it ran on.
  if (in == 0 && out == 0 && backend) std::tie(in, out) = elementsInOut(*backend, kind);
  const auto params = commParamsOf(trace, op);
  if (params) {
    if (in == 0 && out == 0) std::tie(in, out) = std::pair{params->in, params->out};  // no shapes recorded
    if (width == 0) width = params->width;
    if (params->groupSize > 0) e.worldSize = params->groupSize;  // a sub-group's (HSDP), not the world's
  }
  if (width == 0) {
    width = 4;
    ++notes.untypedCollectives;
  }
  e.bytes = in * width;
  e.bytesOut = out * width;
  if (kind == CollectiveOp::AllToAll) e.count = ownPartBytes(trace, op, params, e);
  if (isPointToPoint(kind)) e.count = peerOf(op);
  // The unit and phase from FSDP2's annotation around it, where there is one.
  std::string unit = "model";
  e.phase = static_cast<uint8_t>(Phase::Backward);
  for (const Span* s : profiler::spansAt(trace, op.thread, op.begin)) {
    const std::string u = fsdpUnitOf(s->name);
    if (!u.empty() && unit == "model") unit = u;
    if (s->name.find("forward") != std::string::npos || startsWith(s->name, "FSDP::all_gather")) {
      e.phase = static_cast<uint8_t>(Phase::Forward);
    }
    if (s->name.find("backward") != std::string::npos) e.phase = static_cast<uint8_t>(Phase::Backward);
  }
  if (isPointToPoint(kind)) unit = peerText(op, kind, e.count);
  e.text = unit;
  if (backend && backend->name.find(collectiveOpName(kind)) == std::string::npos) e.text += "|" + backend->name;
  return e;
}

void readCollectives(const RankTrace& trace, std::vector<Event>& out, ReadNotes& notes) {
  BackendMatch backends(trace);
  for (const Span& op : trace.c10dOps) {
    const auto kind = collectiveOpOf(op.name);
    if (!kind) {
      if (trace.rank == 0) ++notes.unreadOps;
      continue;
    }
    out.push_back(collectiveEvent(trace, op, *kind, backends.of(op, *kind), notes));
  }
}

Event computeSpan(int rank, ComputeKind kind, Phase phase, int64_t begin, int64_t end, int step, std::string unit) {
  Event e;
  e.kind = EventKind::Compute;
  e.rank = rank;
  e.op = static_cast<uint8_t>(kind);
  e.phase = static_cast<uint8_t>(phase);
  e.beginNs = begin;
  e.endNs = std::max(end, begin);
  e.step = step;
  e.text = std::move(unit);
  return e;
}

// FSDP2's forward of unit i runs between the end of "FSDP::pre_forward (i)" and the start of
// "FSDP::post_forward (i)"; its backward between "FSDP::pre_backward (i)" and the first
// "FSDP::post_backward_* (i)" (on whichever thread autograd ran it). DDP's forward is its own
// span; its backward, per step, from autograd's first evaluate_function to its last. The
// optimizer's is Optimizer.step.
void readCompute(const RankTrace& trace, std::vector<Event>& out) {
  std::map<int, std::pair<int64_t, int64_t>> autograd;  // step -> first begin, last end
  std::map<int, bool> unitBackward;                     // step -> FSDP2 backward spans read
  for (const auto& [thread, t] : trace.threads) {
    std::map<std::string, int64_t> opened;  // "forward i" / "backward i" -> when it began
    for (const Span& s : t.spans) {
      const int step = profiler::recordedStepAt(trace, s.begin);
      const std::string unit = fsdpUnitOf(s.name);
      if (startsWith(s.name, "FSDP::pre_forward")) opened["forward " + unit] = s.end;
      if (startsWith(s.name, "FSDP::pre_backward")) opened["backward " + unit] = s.end;
      for (const char* phase : {"forward", "backward"}) {
        const auto open = opened.find(std::string(phase) + " " + unit);
        if (!startsWith(s.name, (std::string("FSDP::post_") + phase).c_str()) || open == opened.end()) continue;
        const bool forward = std::string(phase) == "forward";
        out.push_back(computeSpan(trace.rank, forward ? ComputeKind::Forward : ComputeKind::Backward,
                                  forward ? Phase::Forward : Phase::Backward, open->second, s.begin, step, unit));
        if (!forward) unitBackward[step] = true;
        opened.erase(open);
      }
      if (s.name == "DistributedDataParallel.forward") {
        out.push_back(computeSpan(trace.rank, ComputeKind::Forward, Phase::Forward, s.begin, s.end, step, "model"));
      }
      if (startsWith(s.name, "Optimizer.step#")) {
        out.push_back(computeSpan(trace.rank, ComputeKind::Optimizer, Phase::Optimizer, s.begin, s.end, step, ""));
      }
      if (startsWith(s.name, "autograd::engine::evaluate_function") && step >= 0) {
        auto [span, added] = autograd.try_emplace(step, s.begin, s.end);
        if (!added) span->second = {std::min(span->second.first, s.begin), std::max(span->second.second, s.end)};
      }
    }
  }
  for (const auto& [step, span] : autograd) {
    if (!unitBackward[step]) {
      out.push_back(
          computeSpan(trace.rank, ComputeKind::Backward, Phase::Backward, span.first, span.second, step, "model"));
    }
  }
}

void readSteps(const RankTrace& trace, std::vector<Event>& out) {
  for (const auto& s : trace.steps) {
    Event e;
    e.kind = EventKind::StepEnd;
    e.rank = trace.rank;
    e.step = s.number - trace.steps.front().number;
    e.beginNs = s.begin;
    e.endNs = s.end;
    e.count = 1;  // recorded
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

// One rank's file read into its events, in time order; "" or why it could not be read. The rank is
// the one its name says (`namedRank`), which its distributedInfo must agree with; or, for a file
// named otherwise (-1), the one its distributedInfo says: its recorder's notes (`noted`, read by
// the caller for a named file) are read then.
std::string readRankTrace(const fs::path& path, int namedRank, RecorderNotes& noted, std::vector<Event>& events,
                          RankTrace& trace, ReadNotes& notes) {
  std::string error;
  auto text = files::readFileText(path.string(), error, kMaxProfilerTraceBytes);
  if (!text) {
    return files::unreadableReason(path.string(), error, kMaxProfilerTraceBytes, "torch.profiler traces",
                                   "record fewer steps, e.g. Recorder(active=1)");
  }
  const nlohmann::json root = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  text.reset();
  if (root.is_discarded()) {
    return "is not JSON (a truncated file, or not a trace): record it again, letting the profiler finish "
           "(export_chrome_trace writes the whole file at the end)";
  }
  try {
    if (auto problem = profiler::indexTrace(root, trace); !problem.empty()) return problem;
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
    if (fileRank == 0 && !trace.steps.empty()) {
      notes.firstStep = trace.steps.front().number;
      notes.lastStep = trace.steps.back().number;
      if (trace.stepsFromOptimizer) notes.stepsFromOptimizer = static_cast<int>(trace.steps.size());
    }
    if (fileRank == 0) notes.skippedEvents = trace.skippedEvents;
    readSteps(trace, events);
    readCollectives(trace, events, notes);
    readCompute(trace, events);
    readRankMemory(path.parent_path(), trace, noted, events, notes);
  } catch (const nlohmann::json::exception&) {  // a field of an unexpected kind that no check above named
    return "has a malformed event: one of its fields holds another kind of value than torch.profiler writes";
  } catch (const std::exception& ex) {  // a step name that is not one
    return "has a malformed event (" + std::string(ex.what()) + ")";
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return "";
}

// How one rank's clock reads against another's, from ends that happened together on both (a
// collective's, a send's and its recv's): the median difference, and how far they straggle around
// it (the median absolute deviation). None when they are too few, or when any two ended within
// 1 ms: ranks of one host, whose ends straggle by milliseconds on a busy machine, always have some
// that end together, and keep the clock they share.
struct ClockOffset {
  int64_t shiftNs = 0, boundNs = 0;
  int64_t atNs = 0;  // when, on the rank's own clock: its first end (or message)
};

std::optional<ClockOffset> offsetFromEnds(const std::vector<int64_t>& reference, const std::vector<int64_t>& own) {
  if (own.size() != reference.size() || own.empty()) return std::nullopt;
  std::vector<int64_t> diffs;
  int64_t closest = INT64_MAX;
  for (size_t i = 0; i < own.size(); ++i) {
    diffs.push_back(reference[i] - own[i]);
    closest = std::min<int64_t>(closest, std::llabs(diffs.back()));
  }
  if (closest <= 1'000'000) return ClockOffset{};
  const auto middle = [](std::vector<int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const int64_t shift = middle(diffs);
  std::vector<int64_t> spread;
  for (const int64_t d : diffs) spread.push_back(std::llabs(d - shift));
  return ClockOffset{shift, std::max<int64_t>(middle(spread), 1), own.front()};
}

// The ends of the collectives every rank of a group runs, in order (not sends and recvs: a
// pipeline's stages run different numbers of them).
std::vector<int64_t> groupCollectiveEnds(const std::vector<Event>& events) {
  std::vector<int64_t> out;
  for (const auto& e : events) {
    if (e.kind == EventKind::Collective && !isPointToPoint(static_cast<CollectiveOp>(e.op))) out.push_back(e.endNs);
  }
  return out;
}

// Each rank's sends and recvs in the world's group (a peer is its rank in the op's group), as
// indices into its events: found once, read again as ranks are moved.
std::vector<std::vector<size_t>> messagesOf(const std::vector<std::vector<Event>>& ranks) {
  std::vector<std::vector<size_t>> out(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (size_t i = 0; i < ranks[r].size(); ++i) {
      const Event& e = ranks[r][i];
      if (e.kind == EventKind::Collective && isPointToPoint(static_cast<CollectiveOp>(e.op)) && e.count >= 0 &&
          static_cast<size_t>(e.worldSize) == ranks.size()) {
        out[r].push_back(i);
      }
    }
  }
  return out;
}

// When a rank's sends to `peer` began (on a GPU, when their kernel did), or its recvs from it
// ended (`op`), in order.
std::vector<int64_t> messageTimes(const std::vector<Event>& events, const std::vector<size_t>& messages,
                                  CollectiveOp op, int peer) {
  std::vector<int64_t> out;
  for (size_t i : messages) {
    const Event& e = events[i];
    if (static_cast<CollectiveOp>(e.op) == op && e.count == peer)
      out.push_back(op == CollectiveOp::Send ? e.beginNs : e.endNs);
  }
  return out;
}

// Rank b's clock against placed rank a's, from the messages between them, paired in order (as c10d
// delivers them between two ranks). A message arrives after it was sent: a recv ends after its
// send began, in true time, however late either side ran (a send's end is no such bound: a send of
// a few bytes ends once they are written, or later when its process is descheduled). So each of
// a's sends to b bounds b's shift from below, each of b's sends to a from above, and the message
// whose receiver was already waiting bounds it closest, to within its latency (NTP keeps its
// least-delayed samples alike). The shift is the tightest bound, or the middle of the two, and its
// uncertainty half the gap between them; with one direction only, the messages' median delay
// beyond the quickest one's (the quickest one's own latency is not known). Not moved where the
// bounds allow the clocks to agree (one direction: the bound within 1 ms of 0, one host's
// latencies); none where they contradict each other (messages paired wrongly, such as
// differently tagged ones posted at once, or a recv timed by its launch, not its arrival).
std::optional<ClockOffset> offsetFromMessages(const std::vector<std::vector<Event>>& ranks,
                                              const std::vector<std::vector<size_t>>& messages, int a, int b) {
  const auto fromA = messageTimes(ranks[a], messages[a], CollectiveOp::Send, b);
  const auto atB = messageTimes(ranks[b], messages[b], CollectiveOp::Recv, a);
  const auto fromB = messageTimes(ranks[b], messages[b], CollectiveOp::Send, a);
  const auto atA = messageTimes(ranks[a], messages[a], CollectiveOp::Recv, b);
  if (fromA.size() != atB.size() || fromB.size() != atA.size() || fromA.size() + fromB.size() == 0) return std::nullopt;
  std::vector<int64_t> below, above;  // each message's bound on b's shift
  for (size_t i = 0; i < fromA.size(); ++i) below.push_back(fromA[i] - atB[i]);
  for (size_t i = 0; i < fromB.size(); ++i) above.push_back(atA[i] - fromB[i]);
  const int64_t lower = below.empty() ? INT64_MIN : *std::max_element(below.begin(), below.end());
  const int64_t upper = above.empty() ? INT64_MAX : *std::min_element(above.begin(), above.end());
  if (lower > upper) return std::nullopt;
  ClockOffset offset;
  offset.atNs = atB.empty() ? fromB.front() : atB.front();
  if (!below.empty() && !above.empty()) {
    if (lower <= 0 && upper >= 0) return ClockOffset{};  // the clocks may agree: one host's
    offset.shiftNs = lower + (upper - lower) / 2;
    offset.boundNs = std::max<int64_t>((upper - lower) / 2, 1);
    return offset;
  }
  offset.shiftNs = below.empty() ? upper : lower;
  if (std::llabs(offset.shiftNs) <= 1'000'000) return ClockOffset{};
  std::vector<int64_t> delays;  // how much later than the tightest each message's bound lies
  for (int64_t d : below) delays.push_back(lower - d);
  for (int64_t d : above) delays.push_back(d - upper);
  std::nth_element(delays.begin(), delays.begin() + static_cast<std::ptrdiff_t>(delays.size() / 2), delays.end());
  offset.boundNs = std::max<int64_t>(delays[delays.size() / 2], 1);
  return offset;
}

void shiftRank(std::vector<Event>& events, int64_t shift) {
  for (auto& e : events) {
    e.beginNs += shift;
    if (e.endNs != 0) e.endNs += shift;
    if (e.issueNs != 0) e.issueNs += shift;
  }
}

// Ranks on other hosts than rank 0 have clocks of their own: each is moved onto rank 0's by the
// ends of the collectives both ran, when they ran the same ones; a rank they cannot place (a
// pipeline's stage) by the messages it exchanged with a rank already placed, rank by rank from
// rank 0. A moved rank's shift is its clock reading in `rankClocks` (the summary's "clocks"), empty
// when none moved.
void alignOnCollectiveEnds(std::vector<std::vector<Event>>& ranks, std::string& clocks,
                           std::vector<RankClock>& rankClocks) {
  rankClocks.assign(ranks.size(), RankClock{});
  std::vector<bool> placed(ranks.size(), false);
  placed[0] = true;
  auto place = [&](size_t r, const ClockOffset& offset, const std::string& basis) {
    placed[r] = true;
    if (offset.shiftNs == 0) return;
    Event reading;
    reading.beginNs = offset.atNs;
    reading.endNs = offset.atNs + offset.shiftNs;
    reading.count = offset.boundNs;
    rankClocks[r].add(reading);
    shiftRank(ranks[r], offset.shiftNs);
    char text[200];
    std::snprintf(text, sizeof text, "rank %zu shifted by %+.6f s onto rank 0's clock (aligned on %s)\n", r,
                  static_cast<double>(offset.shiftNs) / 1e9, basis.c_str());
    clocks += text;
  };
  const auto messages = messagesOf(ranks);
  const auto reference = groupCollectiveEnds(ranks[0]);
  for (size_t r = 1; r < ranks.size(); ++r) {
    const auto own = groupCollectiveEnds(ranks[r]);
    if (const auto offset = offsetFromEnds(reference, own)) {
      place(r, *offset, "its " + std::to_string(own.size()) + " collectives' ends");
    }
  }
  for (bool more = true; more;) {
    more = false;
    for (size_t b = 1; b < ranks.size(); ++b) {
      for (size_t a = 0; a < ranks.size() && !placed[b]; ++a) {
        if (!placed[a]) continue;
        if (const auto offset = offsetFromMessages(ranks, messages, static_cast<int>(a), static_cast<int>(b))) {
          place(b, *offset, "its messages with rank " + std::to_string(a));
          more = true;
        }
      }
    }
  }
  if (std::none_of(rankClocks.begin(), rankClocks.end(), [](const RankClock& c) { return c.measured(); })) {
    rankClocks.clear();
  }
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
  out += describeMemoryNotes(notes);
  if (notes.untypedCollectives > 0) {
    out += std::to_string(notes.untypedCollectives) +
           " collectives whose element type the trace does not name: their bytes counted at 4 per element\n";
  }
  if (notes.unreadOps > 0) {
    out += "rank 0: " + std::to_string(notes.unreadOps) +
           " c10d ops that are not all-gather, reduce-scatter, all-reduce, broadcast, barrier, all-to-all, send or "
           "recv (gather, scatter, reduce, ...) are not drawn\n";
  }
  if (notes.skippedEvents > 0) {
    out += "rank 0: " + std::to_string(notes.skippedEvents) + " memory events without their fields skipped\n";
  }
  return out;
}

// What the job ran, read from its collectives: shardscope's name for the closest strategy. A unit
// gathered again for backward reshards after forward (FSDP's FULL_SHARD); gathered once a step,
// it keeps its parameters through backward (SHARD_GRAD_OP).
StrategyKind strategyFromCollectives(const std::vector<Event>& events) {
  std::map<std::pair<int, std::string>, int> gathers;  // (step, unit) -> all-gathers
  for (const auto& e : events) {
    if (e.kind == EventKind::Collective && static_cast<CollectiveOp>(e.op) == CollectiveOp::AllGather) {
      ++gathers[{e.step, collectiveUnit(e)}];
    }
  }
  int most = 0;
  for (const auto& g : gathers) most = std::max(most, g.second);
  return strategyWithUnitGathers(most);
}

// How the view's title describes the job: by the strategy its collectives are closest to, or, for
// a job with no all-gather or all-reduce (a pipeline's sends, an MoE's all-to-all), by what it ran.
std::string jobDescription(const std::vector<Event>& events, StrategyKind strategy) {
  std::set<CollectiveOp> ran;
  for (const auto& e : events) {
    if (e.kind == EventKind::Collective) ran.insert(static_cast<CollectiveOp>(e.op));
  }
  // An MoE's all-to-alls or a pipeline's sends beside the data-parallel ones are named after them.
  std::string others;
  for (CollectiveOp op : {CollectiveOp::AllToAll, CollectiveOp::Send, CollectiveOp::Recv}) {
    if (ran.count(op)) others += (others.empty() ? "" : ", ") + std::string(collectiveOpName(op));
  }
  const std::string also = others.empty() ? "" : ", with " + others;
  if (strategy == StrategyKind::FullShard) return "sharded, gathered again for backward (FULL_SHARD-like)" + also;
  if (strategy == StrategyKind::ShardGradOp) return "sharded, gathered once a step (SHARD_GRAD_OP-like)" + also;
  if (ran.count(CollectiveOp::AllReduce)) return "ddp-like: all-reduces" + also;
  if (ran.empty()) return "no collectives recorded";
  std::string names;
  for (CollectiveOp op : ran) names += (names.empty() ? "" : ", ") + std::string(collectiveOpName(op));
  return "not data-parallel: " + names;
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

// Each file read, its rank known (import/profiler_trace.h), then merged on one clock.
LoadedTrace loadRankFiles(const std::vector<RankFile>& files) {
  LoadedTrace out;
  std::vector<std::vector<Event>> events;
  std::vector<fs::path> readFrom;    // per rank: the file it came from
  std::vector<std::string> torchOf;  // per rank: the PyTorch its recorder noted, or ""
  int world = 0;
  ReadNotes notes;
  for (const auto& file : files) {
    // The PyTorch the package noted beside the trace: a major version this reader was not written
    // for is refused before reading a named file (its annotations and op names may differ), and
    // once its rank is known for one named otherwise.
    RecorderNotes noted;
    if (file.namedRank >= 0) noted = recorderNotesOf(file.path.parent_path(), file.namedRank);
    auto unsupported = [&](int rank) {
      out.error = "'" + file.path.string() + "' was written by PyTorch " + noted.torchVersion + " (rank-" +
                  std::to_string(rank) +
                  ".shardscope.json); this shardscope reads torch.profiler traces of PyTorch "
                  "2.x (tested with " +
                  kTestedTorch + "): record the job under PyTorch 2.x.";
      return out;
    };
    auto supported = [&] { return noted.torchVersion.empty() || noted.torchVersion.rfind("2.", 0) == 0; };
    if (!supported()) return unsupported(file.namedRank);
    std::vector<Event> rankEvents;
    RankTrace trace;
    if (auto problem = readRankTrace(file.path, file.namedRank, noted, rankEvents, trace, notes); !problem.empty()) {
      const std::string& torch = noted.torchVersion;
      out.error = "'" + file.path.string() + "' " + problem +
                  (torch.empty() ? "" : " (written by PyTorch " + torch + ")") + ".";
      return out;
    }
    if (!supported()) return unsupported(trace.rank);
    const auto rank = static_cast<size_t>(trace.rank);
    if (rank >= events.size()) {
      events.resize(rank + 1);
      readFrom.resize(rank + 1);
      torchOf.resize(rank + 1);
    }
    if (!readFrom[rank].empty()) {
      const bool unranked = !notes.unrankedFiles.empty();
      out.error =
          "'" + readFrom[rank].string() + "' and '" + file.path.string() + "' are both rank " + std::to_string(rank) +
          (unranked ? " (a file that names no rank, by distributedInfo or a rank-R in its name, is rank 0)" : "") +
          ": name one trace per rank";
      return out;
    }
    events[rank] = std::move(rankEvents);
    readFrom[rank] = file.path;
    torchOf[rank] = noted.torchVersion;
    // The job's world as its ranks say it: a missing last rank is a rank without a trace.
    if (trace.world <= kMaxRanks) world = std::max(world, trace.world);
  }
  const int ranks = std::max(world, static_cast<int>(events.size()));
  events.resize(static_cast<size_t>(ranks));
  readFrom.resize(static_cast<size_t>(ranks));
  std::vector<int> missing;
  for (int r = 0; r < ranks; ++r) {
    if (readFrom[static_cast<size_t>(r)].empty()) missing.push_back(r);
  }
  alignOnCollectiveEnds(events, out.clocks, out.rankClocks);
  out.recording.reset(ranks);
  for (const auto& rank : events) {
    for (const auto& e : rank) out.recording.add(e);
  }
  out.config.world = ranks;
  out.config.batch = 0;  // the job's batch and model are not in its trace: no rates are derived
  out.config.steps = static_cast<int>(out.recording.rank(0).steps.size());
  out.jobLabel = "a PyTorch job's own model (not in the trace)";
  out.source = "torch.profiler";
  out.config.strategy = strategyFromCollectives(events[0]);
  out.title = "a PyTorch job (torch.profiler), " + jobDescription(events[0], out.config.strategy);
  const std::string torch = torchOf.empty() ? "" : torchOf[0];
  out.device = "recorded by torch.profiler" + (torch.empty() ? std::string() : " (PyTorch " + torch + ")");
  if (!missing.empty()) out.note += "no trace for rank " + formatRanks(missing) + "\n";
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
  const auto head = files::readFileText(path, error, files::kMaxTraceBytes, /*prefix=*/4096);
  if (!head) return false;
  // Kineto writes it first: {"schemaVersion": 1, "deviceProperties": ..., "traceEvents": [...]}.
  const size_t open = head->find_first_not_of(" \t\r\n");
  return open != std::string::npos && (*head)[open] == '{' && head->find("\"schemaVersion\"") != std::string::npos;
}

}  // namespace shardscope::trace
