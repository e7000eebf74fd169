#include "trace/profiler_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <functional>
#include <regex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "trace/profiler_roles.h"

namespace shardscope::trace {

namespace fs = std::filesystem;

namespace {

constexpr int kSupportedSchema = 1;  // torch.profiler's Chrome trace "schemaVersion" (torch 2.x)

// +1 keeps the first event off 0, which RunRecording reads as "no timestamp".
int64_t nanos(double micros) { return static_cast<int64_t>(std::llround(micros * 1e3)) + 1; }

struct Span {
  std::string name;
  int64_t begin = 0, end = 0;
  int64_t tid = 0;
  const nlohmann::json* args = nullptr;
};

// One rank's trace, its events sorted into what the reading below needs.
struct RankTrace {
  int rank = -1, world = 0;
  int64_t mainTid = -1;                     // the thread of the ProfilerStep annotations
  std::vector<Span> steps;                  // ProfilerStep#N, in order
  int firstStep = 0;                        // the first N: the recording's steps count from it
  std::vector<Span> c10dOps;                // c10d::..., in time order
  std::vector<Span> backendSpans;           // gloo:... / nccl:..., in time order
  std::map<int64_t, std::vector<Span>> spansByTid;  // every X event, by begin, per thread
  std::vector<const nlohmann::json*> memory;        // [memory] instants
};

std::map<int, fs::path> traceFiles(const std::string& dir, std::error_code& error) {
  static const std::regex name(R"(rank-([0-9]{1,4})\.pt\.trace\.json(\.gz)?)");
  std::map<int, fs::path> out;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::smatch match;
    const std::string file = it->path().filename().string();
    if (std::regex_match(file, match, name) && std::stoi(match[1].str()) < kMaxRanks) {
      out[std::stoi(match[1].str())] = it->path();
    }
  }
  return out;
}

// An event's thread: a number, or for the profiler's own rows a name ("PyTorch Profiler (0)").
int64_t tidOf(const nlohmann::json& e) {
  if (!e.contains("tid")) return 0;
  const auto& tid = e["tid"];
  if (tid.is_number_integer()) return tid.get<int64_t>();
  return tid.is_string() ? -static_cast<int64_t>(std::hash<std::string>{}(tid.get<std::string>()) >> 1) - 1 : 0;
}

int profilerStepNumber(const Span& s) { return std::stoi(s.name.substr(13)); }  // "ProfilerStep#N"

bool isBackendSpan(const std::string& name) { return name.rfind("gloo:", 0) == 0 || name.rfind("nccl:", 0) == 0; }

// The trace's events sorted per kind; "" or why the file is not a trace this reader knows.
std::string indexTrace(const nlohmann::json& root, RankTrace& out) {
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    return "is not a torch.profiler trace (no traceEvents array): write it with torch.profiler's "
           "export_chrome_trace, e.g. by python/shardscope_record";
  }
  const int schema = root.value("schemaVersion", -1);
  if (schema != kSupportedSchema) {
    return "has schemaVersion " + std::to_string(schema) + "; this shardscope reads torch.profiler's schema " +
           std::to_string(kSupportedSchema) + " (PyTorch 2.x)";
  }
  if (root.contains("distributedInfo") && root["distributedInfo"].is_object()) {
    out.rank = root["distributedInfo"].value("rank", -1);
    out.world = root["distributedInfo"].value("world_size", 0);
  }
  for (const auto& e : root["traceEvents"]) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("ts")) continue;
    const std::string& name = e["name"].get_ref<const std::string&>();
    const std::string ph = e.value("ph", "");
    if (ph == "i" && name == "[memory]") {
      out.memory.push_back(&e);
      continue;
    }
    if (ph != "X" || !e.contains("dur")) continue;
    if (!e["ts"].is_number() || !e["dur"].is_number()) continue;
    Span s{name, nanos(e["ts"].get<double>()), 0, tidOf(e), e.contains("args") ? &e["args"] : nullptr};
    s.end = s.begin + static_cast<int64_t>(std::llround(e["dur"].get<double>() * 1e3));
    if (name.rfind("ProfilerStep#", 0) == 0) {
      out.steps.push_back(s);
      out.mainTid = s.tid;
    }
    if (name.rfind("c10d::", 0) == 0) out.c10dOps.push_back(s);
    if (isBackendSpan(name)) out.backendSpans.push_back(s);
    out.spansByTid[s.tid].push_back(std::move(s));
  }
  const auto byBegin = [](const Span& a, const Span& b) { return a.begin < b.begin || (a.begin == b.begin && a.end > b.end); };
  for (auto* list : {&out.steps, &out.c10dOps, &out.backendSpans}) std::sort(list->begin(), list->end(), byBegin);
  if (!out.steps.empty()) out.firstStep = profilerStepNumber(out.steps.front());
  for (auto& [tid, spans] : out.spansByTid) std::sort(spans.begin(), spans.end(), byBegin);
  return "";
}

// The spans of `tid` in force at `t`, innermost first.
std::vector<const Span*> spansAt(const RankTrace& trace, int64_t tid, int64_t t) {
  std::vector<const Span*> out;
  const auto found = trace.spansByTid.find(tid);
  if (found == trace.spansByTid.end()) return out;
  const auto& spans = found->second;
  auto it = std::upper_bound(spans.begin(), spans.end(), t, [](int64_t v, const Span& s) { return v < s.begin; });
  while (it != spans.begin()) {
    --it;
    if (it->end >= t) out.push_back(&*it);
    if (it->name.rfind("ProfilerStep#", 0) == 0) break;  // nothing encloses a step that matters here
  }
  return out;
}

// The recorded step whose ProfilerStep holds `t` (0: the first recorded), or -1.
int stepAt(const RankTrace& trace, int64_t t) {
  for (const auto& s : trace.steps) {
    if (t >= s.begin && t <= s.end) return profilerStepNumber(s) - trace.firstStep;
  }
  return -1;
}

std::optional<CollectiveOp> collectiveOpOf(const std::string& c10dName) {
  const std::string op = c10dName.substr(6);
  if (op == "allreduce_" || op == "allreduce_coalesced_") return CollectiveOp::AllReduce;
  if (op == "_allgather_base_" || op == "allgather_" || op == "allgather_into_tensor_coalesced_") return CollectiveOp::AllGather;
  if (op == "_reduce_scatter_base_" || op == "reduce_scatter_" || op == "reduce_scatter_tensor_coalesced_") {
    return CollectiveOp::ReduceScatter;
  }
  if (op == "broadcast_") return CollectiveOp::Broadcast;
  if (op == "barrier") return CollectiveOp::Barrier;
  return std::nullopt;
}

int64_t elementBytes(const std::string& type) {
  if (type == "float" || type == "int") return 4;
  if (type == "double" || type == "long int" || type == "long") return 8;
  if (type == "c10::BFloat16" || type == "c10::Half" || type == "short") return 2;
  if (type == "unsigned char" || type == "signed char" || type == "bool" || type == "c10::Float8_e4m3fn") return 1;
  return 0;  // unknown (a TensorList says none)
}

// Elements of an "Input Dims" entry: a tensor's dims, or a list of tensors' dims.
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

// The backend span that ran a c10d op: the first unused one of its family from its issue on
// (gloo runs reduce-scatter as an all-reduce of the whole input: "gloo:all_reduce").
const Span* backendSpanOf(const RankTrace& trace, const Span& op, CollectiveOp kind, std::vector<bool>& used) {
  auto ranIt = [kind](const std::string& name) {
    switch (kind) {
      case CollectiveOp::AllGather: return name.find("all_gather") != std::string::npos;
      case CollectiveOp::Broadcast: return name.find("broadcast") != std::string::npos;
      case CollectiveOp::Barrier: return name.find("barrier") != std::string::npos;
      case CollectiveOp::ReduceScatter:
        return name.find("reduce_scatter") != std::string::npos || name.find("all_reduce") != std::string::npos;
      case CollectiveOp::AllReduce: return name.find("all_reduce") != std::string::npos;
    }
    return false;
  };
  for (size_t i = 0; i < trace.backendSpans.size(); ++i) {
    const Span& b = trace.backendSpans[i];
    if (used[i] || b.begin < op.begin || !ranIt(b.name)) continue;
    used[i] = true;
    return &b;
  }
  return nullptr;
}

struct ReadNotes {
  int firstStep = -1, lastStep = -1;  // rank 0's ProfilerStep numbers
  int64_t untypedCollectives = 0;  // element type not in the trace: counted as 4-byte
  int64_t unknownFrees = 0;        // frees of blocks allocated before the profiler started
  int64_t heldAtStart = 0;         // bytes allocated before the profiler started (rank 0's)
  int64_t unnamedBytes = 0;        // rank 0's allocations no span named a role for (other)
  int64_t allocatedBytes = 0;      // rank 0's allocations in all
};

Event collectiveEvent(const RankTrace& trace, const Span& op, CollectiveOp kind, const Span* backend, ReadNotes& notes) {
  Event e;
  e.kind = EventKind::Collective;
  e.rank = trace.rank;
  e.op = static_cast<uint8_t>(kind);
  e.issueNs = e.beginNs = op.begin;
  e.endNs = std::max(op.end, backend ? backend->end : op.end);
  e.step = stepAt(trace, op.begin);
  e.worldSize = trace.world;
  // Input dims: the _base_ ops take (output, input); the others a list of tensors in and out alike.
  const nlohmann::json* dims = op.args && op.args->contains("Input Dims") ? &(*op.args)["Input Dims"] : nullptr;
  int64_t in = 0, out = 0;
  if (dims && dims->is_array() && !dims->empty()) {
    const bool base = op.name.find("_base_") != std::string::npos && dims->size() >= 2;
    out = elementsOf((*dims)[0]);
    in = base ? elementsOf((*dims)[1]) : out;
  }
  int64_t width = elementBytes(firstInputType(op));
  if (width == 0 && backend) width = elementBytes(firstInputType(*backend));
  if (width == 0) {
    width = 4;
    ++notes.untypedCollectives;
  }
  e.bytes = in * width;
  e.bytesOut = out * width;
  // The unit and phase from FSDP2's annotation around it, where there is one.
  std::string unit = "model";
  e.phase = static_cast<uint8_t>(Phase::Backward);
  for (const Span* s : spansAt(trace, op.tid, op.begin)) {
    const std::string u = fsdpUnitOf(s->name);
    if (!u.empty() && unit == "model") unit = u;
    if (s->name.find("forward") != std::string::npos || s->name.rfind("FSDP::all_gather", 0) == 0) {
      e.phase = static_cast<uint8_t>(Phase::Forward);
    }
    if (s->name.find("backward") != std::string::npos) e.phase = static_cast<uint8_t>(Phase::Backward);
  }
  e.text = unit;
  if (backend && backend->name.find(collectiveOpName(kind)) == std::string::npos) e.text += "|" + backend->name;
  return e;
}

void readCollectives(const RankTrace& trace, std::vector<Event>& out, ReadNotes& notes) {
  std::vector<bool> used(trace.backendSpans.size(), false);
  for (const Span& op : trace.c10dOps) {
    const auto kind = collectiveOpOf(op.name);
    if (!kind) continue;
    out.push_back(collectiveEvent(trace, op, *kind, backendSpanOf(trace, op, *kind, used), notes));
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
// "FSDP::post_backward_* (i)". DDP's forward is its own span; the optimizer's is Optimizer.step.
void readCompute(const RankTrace& trace, std::vector<Event>& out) {
  const auto main = trace.spansByTid.find(trace.mainTid);
  if (main == trace.spansByTid.end()) return;
  std::map<std::string, int64_t> opened;  // "forward i" / "backward i" -> when it began
  for (const Span& s : main->second) {
    const int step = stepAt(trace, s.begin);
    const std::string unit = fsdpUnitOf(s.name);
    if (s.name.rfind("FSDP::pre_forward", 0) == 0) opened["forward " + unit] = s.end;
    if (s.name.rfind("FSDP::pre_backward", 0) == 0) opened["backward " + unit] = s.end;
    for (const char* phase : {"forward", "backward"}) {
      const std::string closing = std::string("FSDP::post_") + phase;
      const auto open = opened.find(std::string(phase) + " " + unit);
      if (s.name.rfind(closing, 0) == 0 && open != opened.end()) {
        const bool forward = std::string(phase) == "forward";
        out.push_back(computeSpan(trace.rank, forward ? ComputeKind::Forward : ComputeKind::Backward,
                                  forward ? Phase::Forward : Phase::Backward, open->second, s.begin, step, unit));
        opened.erase(open);
      }
    }
    if (s.name == "DistributedDataParallel.forward") {
      out.push_back(computeSpan(trace.rank, ComputeKind::Forward, Phase::Forward, s.begin, s.end, step, "model"));
    }
    if (s.name.rfind("Optimizer.step#", 0) == 0) {
      out.push_back(computeSpan(trace.rank, ComputeKind::Optimizer, Phase::Optimizer, s.begin, s.end, step, ""));
    }
  }
}

void readSteps(const RankTrace& trace, std::vector<Event>& out) {
  for (const Span& s : trace.steps) {
    Event e;
    e.kind = EventKind::StepEnd;
    e.rank = trace.rank;
    e.step = profilerStepNumber(s) - trace.firstStep;
    e.beginNs = s.begin;
    e.endNs = s.end;
    e.count = 1;  // recorded
    out.push_back(e);
  }
}

// When the step's optimizer began (its forward and backward end there), or its end.
int64_t optimizerBeginOf(const RankTrace& trace, const Span& step) {
  const auto main = trace.spansByTid.find(trace.mainTid);
  if (main == trace.spansByTid.end()) return step.end;
  for (const Span& s : main->second) {
    if (s.begin >= step.begin && s.begin <= step.end && s.name.rfind("Optimizer.step#", 0) == 0) return s.begin;
  }
  return step.end;
}

bool inForwardOrBackward(const RankTrace& trace, int64_t tid, int64_t t) {
  if (tid != trace.mainTid) return false;
  for (const Span& s : trace.steps) {
    if (t >= s.begin && t < optimizerBeginOf(trace, s)) return true;
  }
  return false;
}

Event memoryEvent(int rank, int64_t t, int64_t bytes, MemoryRole role, int step) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  e.bytes = bytes;
  e.role = static_cast<uint8_t>(role);
  e.step = step;
  return e;
}

// The profiler's allocations and frees, each given its role; a free goes to its allocation's role.
// What was held before the profiler started is "other" from its first event on (the first event's
// "Total Allocated" less its own bytes), and frees of it come out of "other": the lane's total is
// the allocator's.
void readMemory(const RankTrace& trace, std::vector<Event>& out, ReadNotes& notes) {
  bool device = false;  // a GPU rank's device memory, else the host's
  for (const auto* m : trace.memory) device = device || (*m)["args"].value("Device Type", 0) == 1;
  std::unordered_map<int64_t, MemoryRole> live;
  bool first = true;
  for (const auto* m : trace.memory) {
    const auto& a = (*m)["args"];
    if ((a.value("Device Type", 0) == 1) != device) continue;
    const int64_t t = nanos((*m)["ts"].get<double>());
    const int64_t bytes = a.value("Bytes", int64_t{0});
    const int64_t addr = a.value("Addr", int64_t{0});
    const int step = stepAt(trace, t);
    if (first) {
      first = false;
      const int64_t held = a.value("Total Allocated", bytes) - bytes;
      if (held > 0) out.push_back(memoryEvent(trace.rank, t - 1, held, MemoryRole::Other, step));
      if (trace.rank == 0) notes.heldAtStart = held;
    }
    if (bytes >= 0) {
      const int64_t tid = tidOf(*m);
      std::vector<const std::string*> names;
      for (const Span* s : spansAt(trace, tid, t)) names.push_back(&s->name);
      const MemoryRole role = profilerAllocationRole(names, inForwardOrBackward(trace, tid, t));
      live[addr] = role;
      out.push_back(memoryEvent(trace.rank, t, bytes, role, step));
      if (trace.rank == 0) {
        notes.allocatedBytes += bytes;
        if (role == MemoryRole::Other) notes.unnamedBytes += bytes;
      }
      continue;
    }
    const auto found = live.find(addr);
    if (found == live.end() && trace.rank == 0) ++notes.unknownFrees;
    out.push_back(memoryEvent(trace.rank, t, bytes, found == live.end() ? MemoryRole::Other : found->second, step));
    if (found != live.end()) live.erase(found);
  }
}

// One rank's file read into its events, in time order; "" or why it could not be read.
std::string readRankTrace(const fs::path& path, int fileRank, std::vector<Event>& events, RankTrace& trace,
                          nlohmann::json& root, ReadNotes& notes) {
  std::string error;
  auto text = files::readFileText(path.string(), error, files::kMaxTraceBytes);
  if (!text) return error;
  root = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return "is not JSON (a truncated file, or not a trace): record it again, letting the profiler finish "
           "(export_chrome_trace writes the whole file at the end)";
  }
  try {
    if (auto problem = indexTrace(root, trace); !problem.empty()) return problem;
  } catch (const std::exception& ex) {  // a field of an unexpected type (json), a step name that is not one
    return "has a malformed event (" + std::string(ex.what()) + ")";
  }
  if (trace.rank >= 0 && trace.rank != fileRank) {
    return "says it is rank " + std::to_string(trace.rank) + " (distributedInfo) but is named for rank " +
           std::to_string(fileRank);
  }
  trace.rank = fileRank;
  if (fileRank == 0 && !trace.steps.empty()) {
    notes.firstStep = trace.firstStep;
    notes.lastStep = profilerStepNumber(trace.steps.back());
  }
  try {
    readSteps(trace, events);
    readCollectives(trace, events, notes);
    readCompute(trace, events);
    readMemory(trace, events, notes);
  } catch (const std::exception& ex) {  // a field of an unexpected type (json), a step name that is not one
    return "has a malformed event (" + std::string(ex.what()) + ")";
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return "";
}

// Ranks on other hosts than rank 0 have clocks of their own: each is moved by the median
// difference between rank 0's collective ends and its own (a collective ends together on every
// rank, to within the backend's last message), when the ranks ran the same collectives and none
// of them ended within 1 ms of rank 0's: ranks of one host, whose ends straggle by milliseconds
// on a busy machine, always have some that end together, and stay as they are.
void alignOnCollectiveEnds(std::vector<std::vector<Event>>& ranks, std::string& clocks) {
  auto ends = [](const std::vector<Event>& events) {
    std::vector<int64_t> out;
    for (const auto& e : events) {
      if (e.kind == EventKind::Collective) out.push_back(e.endNs);
    }
    return out;
  };
  const auto reference = ends(ranks[0]);
  for (size_t r = 1; r < ranks.size(); ++r) {
    const auto own = ends(ranks[r]);
    if (own.size() != reference.size() || own.empty()) continue;
    std::vector<int64_t> diffs;
    int64_t closest = INT64_MAX;
    for (size_t i = 0; i < own.size(); ++i) {
      diffs.push_back(reference[i] - own[i]);
      closest = std::min<int64_t>(closest, std::llabs(diffs.back()));
    }
    if (closest <= 1'000'000) continue;
    std::nth_element(diffs.begin(), diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2), diffs.end());
    const int64_t shift = diffs[diffs.size() / 2];
    for (auto& e : ranks[r]) {
      e.beginNs += shift;
      if (e.endNs != 0) e.endNs += shift;
      if (e.issueNs != 0) e.issueNs += shift;
    }
    char text[160];
    std::snprintf(text, sizeof text, "rank %zu shifted by %+.6f s onto rank 0's clock (aligned on its %zu collectives' ends)\n",
                  r, static_cast<double>(shift) / 1e9, own.size());
    clocks += text;
  }
}

std::string describeNotes(const ReadNotes& notes) {
  std::string out;
  if (notes.firstStep > 0) {
    out += "the profiler recorded the job's steps " + std::to_string(notes.firstStep) + " to " +
           std::to_string(notes.lastStep) + " (ProfilerStep#N), shown as steps 0 to " +
           std::to_string(notes.lastStep - notes.firstStep) + "\n";
  }
  if (notes.heldAtStart > 0) {
    out += "rank 0 held " + std::to_string(notes.heldAtStart) +
           " bytes when the profiler started (allocated before it, so their roles are unknown): shown as other\n";
  }
  if (notes.unnamedBytes > 0) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(notes.unnamedBytes) /
                                                     static_cast<double>(std::max<int64_t>(notes.allocatedBytes, 1)));
    out += "rank 0: " + std::to_string(notes.unnamedBytes) + " bytes allocated where no span names a role (" + share +
           " of what it allocated while recorded): shown as other\n";
  }
  if (notes.unknownFrees > 0) {
    out += "rank 0: " + std::to_string(notes.unknownFrees) +
           " frees of blocks allocated before the profiler started: taken from other\n";
  }
  if (notes.untypedCollectives > 0) {
    out += std::to_string(notes.untypedCollectives) +
           " collectives whose element type the trace does not name: their bytes counted at 4 per element\n";
  }
  return out;
}

// What the job ran, read from its collectives: shardscope's name for the closest strategy.
StrategyKind strategyFromCollectives(const std::vector<Event>& events) {
  for (const auto& e : events) {
    if (e.kind == EventKind::Collective && static_cast<CollectiveOp>(e.op) == CollectiveOp::AllGather) {
      return StrategyKind::FullShard;
    }
  }
  return StrategyKind::Ddp;
}

}  // namespace

std::string profilerTraceFileName(const std::string& dir, int rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".pt.trace.json")).string();
}

bool isProfilerTraceDirectory(const std::string& dir) {
  std::error_code error;
  return fs::is_directory(dir, error) && !traceFiles(dir, error).empty();
}

LoadedTrace loadProfilerTraces(const std::string& dir) {
  LoadedTrace out;
  std::error_code error;
  const auto files = traceFiles(dir, error);
  if (error || files.empty()) {
    out.error = "'" + dir + "' holds no rank-R.pt.trace.json (torch.profiler traces, one per rank): record a job "
                "with python/shardscope_record, or name the files so";
    return out;
  }
  const int ranks = files.rbegin()->first + 1;
  std::vector<std::vector<Event>> events(static_cast<size_t>(ranks));
  ReadNotes notes;
  std::string missing;
  for (int r = 0; r < ranks; ++r) {
    const auto file = files.find(r);
    if (file == files.end()) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      continue;
    }
    RankTrace trace;
    nlohmann::json root;
    if (auto problem = readRankTrace(file->second, r, events[static_cast<size_t>(r)], trace, root, notes);
        !problem.empty()) {
      out.error = "'" + file->second.string() + "' " + problem + ".";
      return out;
    }
  }
  alignOnCollectiveEnds(events, out.clocks);
  out.recording.reset(ranks);
  for (const auto& rank : events) {
    for (const auto& e : rank) out.recording.add(e);
  }
  out.config.world = ranks;
  out.config.batch = 0;  // the job's batch and model are not in its trace: no rates are derived
  out.config.steps = static_cast<int>(out.recording.rank(0).steps.size());
  out.jobLabel = "a PyTorch job's own model (not in the trace)";
  out.config.strategy = strategyFromCollectives(events[0]);
  out.title = std::string("a PyTorch job (torch.profiler), ") +
              (out.config.strategy == StrategyKind::FullShard ? "sharded: all-gathers and reduce-scatters" : "ddp-like: all-reduces");
  out.device = "recorded by torch.profiler";
  if (!missing.empty()) out.note += "no trace for rank " + missing + "\n";
  out.note += describeNotes(notes);
  return out;
}

}  // namespace shardscope::trace
