#include "import/profiler_trace_index.h"

#include <algorithm>
#include <tuple>
#include <map>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string_view>

#include "files/user_json.h"
#include "files/chrome_trace_stream.h"
#include "trace/events.h"

namespace shardscope::import::profiler {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace {

constexpr int kSupportedSchema = 1;  // torch.profiler's Chrome trace "schemaVersion" (PyTorch 2.x)

bool isHostSpan(std::string_view category) {
  return category == "cpu_op" || category == "user_annotation" || category == "python_function";
}

int64_t threadOf(const ChromeEvent& f) {
  return static_cast<int64_t>(std::hash<int64_t>{}(f.pid) * 31 + std::hash<int64_t>{}(f.tid));
}

int64_t durationNs(const ChromeEvent& f) { return static_cast<int64_t>(std::llround(f.dur * 1e3)); }

// The args read as numbers: a [memory] event's, a kernel launch's correlation id.
const std::vector<std::string_view> kMemoryArgs = {"Bytes",       "Addr",      "Total Allocated",
                                                   "Device Type", "Device Id", "Total Reserved"};
const std::vector<std::string_view> kCorrelationArg = {"correlation"};
// The args that say what an event is where it names no category: a kernel carries its device and
// stream, a launch its correlation id, a host op its External id.
const std::vector<std::string_view> kKindArgs = {"device", "stream", "correlation", "External id"};

struct ArgsReader {
  ChromeArgs args;
  std::vector<int64_t> values;
  std::vector<bool> found;

  // A [memory] event's numbers into `m`; "" or which field holds another kind of value.
  std::string memory(std::string_view text, MemoryRecord& m) {
    if (auto wrong = args.integers(text, kMemoryArgs, values, found); !wrong.empty()) return wrong;
    m.bytes = values[0];
    m.addr = values[1];
    m.totalAllocated = found[2] ? values[2] : m.bytes;
    if (!plausibleMemoryBytes(m.bytes) || !plausibleMemoryBytes(m.totalAllocated)) {
      return "its \"args.Bytes\" or \"args.Total Allocated\" is " +
             std::to_string(plausibleMemoryBytes(m.bytes) ? m.totalAllocated : m.bytes) +
             ", more than any allocation (1 PiB either way): the file is damaged";
    }
    m.deviceType = static_cast<int>(values[3]);
    m.deviceId = found[4] ? static_cast<int>(values[4]) : -1;
    return "";
  }

  // args.correlation, or -1.
  int64_t correlation(std::string_view text) {
    return args.integers(text, kCorrelationArg, values, found).empty() && found[0] ? values[0] : -1;
  }

  // The category Kineto gives an event like `f`, told from its name and args where its exporter
  // wrote none; "" when they do not say.
  std::string_view categoryFromArgs(const ChromeEvent& f) {
    if (f.args.empty() || !args.integers(f.args, kKindArgs, values, found).empty()) return "";
    const bool onDevice = found[0] && found[1];
    if (onDevice) {
      // Of a device's rows only kernels carry their launch's grid and block; its annotations
      // (gpu_user_annotation: a step's copy, FSDP's ranges) carry neither.
      if (startsWith(f.name, "Memcpy") || startsWith(f.name, "Memset")) return "gpu_memcpy";
      const bool launched = f.args.find("\"grid\"") != f.args.npos && f.args.find("\"block\"") != f.args.npos;
      return launched ? "kernel" : "gpu_user_annotation";
    }
    if (found[2]) return "cuda_runtime";  // the host's runtime calls carry their correlation id
    if (found[3]) return startsWith(f.name, "ProfilerStep#") ? "user_annotation" : "cpu_op";
    return "";
  }
};

// Which record of a collective a host span's name says it is, if any: its args are read after
// indexing (import/profiler_trace.cpp) only then. Asked once a span.
enum class CollectiveRecord : uint8_t { None, C10dOp, BackendSpan, OutsideC10dOp, ParamComms };
CollectiveRecord collectiveRecordOf(std::string_view name) {
  if (startsWith(name, "aten::")) return CollectiveRecord::None;  // most of a trace's spans
  if (startsWith(name, "c10d::")) return CollectiveRecord::C10dOp;
  if (isBackendSpanName(name)) return CollectiveRecord::BackendSpan;
  if (name == "record_param_comms") return CollectiveRecord::ParamComms;
  return isOutsideC10dCollectiveName(name) ? CollectiveRecord::OutsideC10dOp : CollectiveRecord::None;
}

const nlohmann::json* keptArgs(std::string_view args, RankTrace& out) {
  if (args.empty()) return nullptr;
  out.args.push_back(files::parseUserJson(std::string(args)).value);
  return &out.args.back();
}

// A kernel launch on the host, or an NCCL kernel on the device: kept (true) for ncclKernelOf.
bool takeGpuEvent(const ChromeEvent& f, ArgsReader& reader, RankTrace& out) {
  const bool launch = (f.cat == "cuda_runtime" || f.cat == "cuda_driver") && f.name.find("LaunchKernel") != f.name.npos;
  const bool kernel = f.cat == "kernel";
  const bool ncclKernel = kernel && startsWith(f.name, "nccl");
  if (!launch && !kernel) return false;
  const int64_t correlation = f.args.empty() ? -1 : reader.correlation(f.args);
  if (kernel && !ncclKernel && f.hasDur && isCommunicationKernelName(f.name)) {
    out.commKernels.push_back({std::string(f.name), nanos(f.ts), nanos(f.ts) + durationNs(f), correlation});
  } else if (kernel && !ncclKernel) {
    if (f.hasDur) out.computeKernels.push_back({nanos(f.ts), nanos(f.ts) + durationNs(f), correlation});
  }
  if (kernel && !ncclKernel) return true;
  if (correlation < 0 || !f.hasDur) return true;
  const int64_t begin = nanos(f.ts);
  if (launch) {
    out.launches.push_back({threadOf(f), begin, correlation});
  } else {
    out.ncclKernels.emplace(
        correlation, Span{std::string(f.name), begin, begin + durationNs(f), threadOf(f), keptArgs(f.args, out)});
  }
  return true;
}

// A [memory] event into the list; "" or why its fields cannot be read.
std::string takeMemory(const ChromeEvent& f, size_t index, ArgsReader& reader, RankTrace& out) {
  if (f.args.empty()) {
    ++out.skippedEvents;
    return "";
  }
  MemoryRecord m{nanos(f.ts), threadOf(f)};
  if (auto wrong = reader.memory(f.args, m); !wrong.empty())
    return "has a malformed event: in its event " + std::to_string(index) + " (a [memory] event), " + wrong;
  out.memory.push_back(m);
  return "";
}

// "" or which of the event's times (its begin, duration or end) is past any a trace holds: checked
// before they are converted to nanoseconds (past int64's range that is undefined) and summed.
std::string implausibleTime(const ChromeEvent& f, size_t index) {
  const auto past = [&](const char* what, double us) {
    return "has a malformed event: in its event " + std::to_string(index) + ", " + what + " is " +
           files::shownValue(nlohmann::json(us)) +
           " us, past any time a trace holds (2^62 ns, 146 years, either way): the file is damaged";
  };
  if (!plausibleTimeUs(f.ts)) return past("its \"ts\"", f.ts);
  if (f.hasDur && !plausibleTimeUs(f.dur)) return past("its \"dur\"", f.dur);
  if (f.hasDur && !plausibleTimeUs(f.ts + f.dur)) return past("its end (\"ts\" + \"dur\")", f.ts + f.dur);
  return "";
}

// One event, if it is one this reader takes, into its list; "" or why a field could not be read.
std::string take(const ChromeEvent& event, size_t index, ArgsReader& reader, RankTrace& out, std::vector<Span>& steps,
                 std::vector<Span>& deviceSteps) {
  if (event.ph == "M") out.hasMetadata = true;
  if (!event.hasName || !event.hasTs) return "";
  ChromeEvent f = event;
  if (f.cat.empty() && f.ph == "X") {
    f.cat = reader.categoryFromArgs(event);
    out.categoriesFromArgs += !f.cat.empty();
  }
  out.kinetoShaped |= isHostSpan(f.cat) || f.cat == "kernel" || f.cat == "cuda_runtime";
  if (f.ph == "X" && f.cat == "gpu_user_annotation" && f.hasDur && startsWith(f.name, "ProfilerStep#")) {
    if (auto wrong = implausibleTime(f, index); !wrong.empty()) return wrong;
    deviceSteps.push_back({std::string(f.name), nanos(f.ts), nanos(f.ts) + durationNs(f), threadOf(f), nullptr});
    return "";
  }
  const bool mayTake = f.ph == "X" || (f.ph == "i" && f.name == "[memory]");
  if (auto wrong = mayTake ? implausibleTime(f, index) : ""; !wrong.empty()) return wrong;
  if (f.ph == "i" && f.name == "[memory]") return takeMemory(f, index, reader, out);
  if (f.ph == "X" && takeGpuEvent(f, reader, out)) return "";
  if (f.ph != "X" || !isHostSpan(f.cat) || !f.hasDur) return "";
  const CollectiveRecord record = collectiveRecordOf(f.name);
  Span s{std::string(f.name), nanos(f.ts), 0, threadOf(f),
         record != CollectiveRecord::None ? keptArgs(f.args, out) : nullptr};
  s.end = s.begin + durationNs(f);
  if (startsWith(f.name, "ProfilerStep#") && f.cat == "user_annotation") steps.push_back(s);
  if (record == CollectiveRecord::C10dOp) out.c10dOps.push_back(s);
  if (record == CollectiveRecord::BackendSpan) out.backendSpans.push_back(s);
  if (record == CollectiveRecord::OutsideC10dOp) out.outsideC10dOps.push_back(s);
  out.threads[s.thread].spans.push_back(std::move(s));
  return "";
}

bool byBegin(const Span& a, const Span& b) { return a.begin < b.begin || (a.begin == b.begin && a.end > b.end); }

// Each span's parent: the innermost earlier span still open when it begins (one stack sweep).
void linkParents(ThreadSpans& t) {
  std::sort(t.spans.begin(), t.spans.end(), byBegin);
  t.parent.assign(t.spans.size(), -1);
  std::vector<int> open;
  for (int i = 0; i < static_cast<int>(t.spans.size()); ++i) {
    while (!open.empty() && t.spans[static_cast<size_t>(open.back())].end < t.spans[static_cast<size_t>(i)].begin) {
      open.pop_back();
    }
    t.parent[static_cast<size_t>(i)] = open.empty() ? -1 : open.back();
    open.push_back(i);
  }
}

// A trace without ProfilerStep#N still says where each step ends: at the end of its optimizer
// step (torch.optim annotates every step() as Optimizer.step#...). A step is taken to begin where
// the one before ended; the first, at its thread's first span. An optimizer's step inside
// another's (ZeroRedundancyOptimizer stepping its local Adam) is part of that one.
void stepsFromOptimizerSteps(RankTrace& out) {
  std::vector<const Span*> optimizerSteps;
  for (const auto& [thread, t] : out.threads) {
    for (const Span& s : t.spans) {
      if (startsWith(s.name, "Optimizer.step#")) optimizerSteps.push_back(&s);
    }
  }
  if (optimizerSteps.empty()) return;
  std::sort(optimizerSteps.begin(), optimizerSteps.end(), [](const Span* a, const Span* b) { return byBegin(*a, *b); });
  out.mainThread = optimizerSteps.front()->thread;
  int64_t begin = out.threads.at(out.mainThread).spans.front().begin;  // sorted by linkParents
  for (const Span* s : optimizerSteps) {
    if (s->thread != out.mainThread || (!out.steps.empty() && s->begin < out.steps.back().end)) continue;
    out.steps.push_back({static_cast<int>(out.steps.size()), begin, s->end, s->begin});
    begin = s->end + 1;
  }
  out.stepsFromOptimizer = true;
}

// A trace that marks no step is one: from its first span or kernel to its last. Its main thread is
// the one with the most spans (the one that ran the model).
void stepFromWholeTrace(RankTrace& out) {
  int64_t begin = kMaxTimeNs, end = 0;
  size_t most = 0;
  for (const auto& [thread, t] : out.threads) {
    for (const Span& s : t.spans) std::tie(begin, end) = std::pair{std::min(begin, s.begin), std::max(end, s.end)};
    if (t.spans.size() > most) std::tie(most, out.mainThread) = std::pair{t.spans.size(), thread};
  }
  for (const auto& k : out.computeKernels)
    std::tie(begin, end) = std::pair{std::min(begin, k.begin), std::max(end, k.end)};
  for (const auto& [correlation, k] : out.ncclKernels)
    std::tie(begin, end) = std::pair{std::min(begin, k.begin), std::max(end, k.end)};
  for (const auto& k : out.commKernels)
    std::tie(begin, end) = std::pair{std::min(begin, k.begin), std::max(end, k.end)};
  if (end <= 0) return;  // nothing timed
  out.steps.push_back({0, begin, end, end});
  out.stepsFromWholeTrace = true;
}

// Each step's GPU-side copy (PyTorch writes one on each stream that ran its work): from the
// earliest begin to the latest end of those of its number. The trace's steps are the device's
// only where every step has one.
void indexDeviceSteps(const std::vector<Span>& deviceSteps, RankTrace& out) {
  if (deviceSteps.empty() || out.stepsFromOptimizer) return;
  std::map<int, std::pair<int64_t, int64_t>> byNumber;
  for (const Span& s : deviceSteps) {
    const int number = std::atoi(s.name.c_str() + 13);
    auto [it, added] = byNumber.try_emplace(number, s.begin, s.end);
    if (!added) it->second = {std::min(it->second.first, s.begin), std::max(it->second.second, s.end)};
  }
  for (const Step& step : out.steps) {
    if (!byNumber.count(step.number)) return;
  }
  for (Step& step : out.steps) std::tie(step.deviceBegin, step.deviceEnd) = byNumber.at(step.number);
  out.stepsOnDevice = true;
}

// The steps with their numbers and where their optimizer steps begin (a span on any thread).
void indexSteps(std::vector<Span>& steps, RankTrace& out) {
  if (steps.empty()) {
    stepsFromOptimizerSteps(out);
    if (out.steps.empty()) stepFromWholeTrace(out);
    return;
  }
  std::sort(steps.begin(), steps.end(), byBegin);
  for (const Span& s : steps) {
    out.steps.push_back({std::stoi(s.name.substr(13)), s.begin, s.end, s.end});
    out.mainThread = s.thread;
  }
  for (const auto& [thread, t] : out.threads) {
    for (const Span& s : t.spans) {
      if (!startsWith(s.name, "Optimizer.step#")) continue;
      if (const Step* step = stepAt(out, s.begin)) {
        auto& optimizer = out.steps[static_cast<size_t>(step - out.steps.data())].optimizerBegin;
        optimizer = std::min(optimizer, s.begin);
      }
    }
  }
}

// A pg_config entry for a pipeline's group: a device mesh's "pp" dimension's ("mesh_pp", or any
// "..._pp"), or one whose description says "pipe".
bool isPipelineGroup(const nlohmann::json& group) {
  const auto desc = group.find("pg_desc");
  if (desc == group.end() || !desc->is_string()) return false;
  const std::string d = desc->get<std::string>();
  const bool meshPp = d == "pp" || (d.size() > 3 && d.compare(d.size() - 3, 3, "_pp") == 0);
  return meshPp || d.find("pipe") != std::string::npos;
}

// Its "ranks", ascending; empty where they are not a list of ranks.
std::vector<int> groupRanks(const nlohmann::json& group) {
  const auto ranks = group.find("ranks");
  std::vector<int> out;
  if (ranks == group.end() || !ranks->is_array()) return out;
  for (const auto& r : *ranks) {
    if (!r.is_number_integer()) return {};
    out.push_back(r.get<int>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The top-level members the reader needs: Kineto writes times as microseconds after
// baseTimeNanoseconds (an epoch time in ns; older traces, as times since the epoch: 0 here).
void takeMember(const std::string& key, const nlohmann::json& value, int& schema, RankTrace& out) {
  if (key == "schemaVersion") out.namesSchema = true;
  if (key == "schemaVersion" && value.is_number_integer()) schema = value.get<int>();
  if (key == "baseTimeNanoseconds" && value.is_number_unsigned() &&
      value.get<uint64_t>() < static_cast<uint64_t>(kMaxTimeNs)) {
    out.baseTimeNs = value.get<int64_t>();
  }
  if (key == "distributedInfo" && value.is_object()) {
    out.rank = value.value("rank", -1);
    out.world = value.value("world_size", 0);
    const auto groups = value.find("pg_config");
    if (groups != value.end() && groups->is_array()) {
      for (const auto& g : *groups) {
        const auto size = g.is_object() ? g.find("pg_size") : g.end();
        if (size != g.end() && size->is_number_integer() && size->get<int>() < out.world) out.listsSubGroups = true;
        if (g.is_object() && isPipelineGroup(g)) out.pipelineGroup = groupRanks(g);
      }
    }
  }
}

}  // namespace

int singleStageOf(const RankTrace& trace) {
  const auto& group = trace.pipelineGroup;
  const auto at = std::find(group.begin(), group.end(), trace.rank);
  return at == group.end() ? trace.rank : static_cast<int>(at - group.begin());
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool isBackendSpanName(std::string_view name) { return startsWith(name, "gloo:") || startsWith(name, "nccl:"); }

// +1 keeps the first event off 0, which RunRecording reads as "no timestamp".
int64_t nanos(double micros) { return static_cast<int64_t>(std::llround(micros * 1e3)) + 1; }

TraceProblem indexTrace(const std::string& path, RankTrace& out) {
  int schema = -1;
  std::vector<Span> steps, deviceSteps;
  ArgsReader reader;
  ChromeTraceHandlers handlers;
  handlers.onMember = [&](const std::string& key, const nlohmann::json& value) { takeMember(key, value, schema, out); };
  handlers.onEvent = [&](const ChromeEvent& event, size_t index) {
    return take(event, index, reader, out, steps, deviceSteps);
  };
  if (auto problem = streamChromeTrace(path, handlers); problem.kind != TraceProblemKind::None) {
    if (problem.kind == TraceProblemKind::NoTraceEvents) {
      problem.message =
          "is not a torch.profiler trace (no traceEvents array): write it with torch.profiler's "
          "export_chrome_trace, e.g. by python/shardscope_record";
    }
    return problem;
  }
  // An exporter that writes the events alone (no schemaVersion, no metadata) is read when its
  // events are Kineto's.
  if (!out.namesSchema && !out.kinetoShaped) {
    return {TraceProblemKind::Refused,
            "is not a torch.profiler trace: no schemaVersion, and none of its events is a host op, kernel or launch "
            "as torch.profiler writes them (\"cat\": \"cpu_op\", \"kernel\", \"cuda_runtime\"; or args with "
            "\"External id\", \"device\" and \"stream\")"};
  }
  if (out.namesSchema && schema != kSupportedSchema) {
    return {TraceProblemKind::Refused, "has schemaVersion " + std::to_string(schema) +
                                           "; this shardscope reads torch.profiler's schema " +
                                           std::to_string(kSupportedSchema) + " (PyTorch 2.x)"};
  }
  for (auto* list : {&out.c10dOps, &out.backendSpans, &out.outsideC10dOps}) {
    std::sort(list->begin(), list->end(), byBegin);
  }
  for (auto& [thread, t] : out.threads) linkParents(t);
  std::sort(out.launches.begin(), out.launches.end(), [](const Launch& a, const Launch& b) { return a.at < b.at; });
  std::sort(out.computeKernels.begin(), out.computeKernels.end(),
            [](const GpuKernel& a, const GpuKernel& b) { return a.begin < b.begin; });
  std::sort(out.commKernels.begin(), out.commKernels.end(),
            [](const CommKernel& a, const CommKernel& b) { return a.begin < b.begin; });
  indexSteps(steps, out);
  indexDeviceSteps(deviceSteps, out);
  std::stable_sort(out.memory.begin(), out.memory.end(),
                   [](const MemoryRecord& a, const MemoryRecord& b) { return a.at < b.at; });
  return {};
}

bool isOutsideC10dCollectiveName(std::string_view name) {
  const size_t ns = name.rfind("::");
  if (ns == std::string_view::npos || ns == 0) return false;
  // PyTorch's own: c10d's ops, and ops that wrap them (functional collectives) or prepare their
  // buffers (FSDP2's fsdp::all_gather_copy_in).
  for (const char* own : {"c10d::", "_c10d_functional::", "c10d_functional::", "aten::", "FSDP::", "fsdp::",
                          "autograd::", "torch::", "DistributedDataParallel"}) {
    if (startsWith(name, own)) return false;
  }
  std::string op;  // the op's own name, lower case, without underscores
  for (char c : name.substr(ns + 2)) {
    if (c != '_') op += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* word : {"allreduce", "allgather", "reducescatter", "alltoall"}) {
    if (op.find(word) != std::string::npos) return true;
  }
  return false;
}

namespace {

// Lower case, without underscores, colons or spaces: "deep_ep::intranode" -> "deepepintranode".
std::string squeezed(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != '_' && c != ':' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

bool isCommunicationKernelName(std::string_view name) {
  const std::string s = squeezed(shortKernelName(name));
  for (const char* word : {"allreduce", "allgather", "reducescatter", "alltoall", "multimem", "symmetricmemory",
                           "nvshmem", "deepep", "pplx", "crossdevice", "sendrecv", "p2p"}) {
    if (s.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string shortKernelName(std::string_view name) {
  if (startsWith(name, "void ")) name.remove_prefix(5);
  return std::string(name.substr(0, name.find_first_of("<(")));
}

std::vector<const Span*> spansAt(const RankTrace& trace, int64_t thread, int64_t t) {
  std::vector<const Span*> out;
  const auto found = trace.threads.find(thread);
  if (found == trace.threads.end()) return out;
  const auto& spans = found->second.spans;
  const auto& parent = found->second.parent;
  int i = static_cast<int>(
              std::upper_bound(spans.begin(), spans.end(), t, [](int64_t v, const Span& s) { return v < s.begin; }) -
              spans.begin()) -
          1;
  // A span that has ended is not in force, and neither is an ancestor that ended before it: a span's
  // parent is the innermost one open at its begin (a backend's span, gloo:send, outlives its op).
  for (; i >= 0; i = parent[static_cast<size_t>(i)]) {
    if (spans[static_cast<size_t>(i)].end >= t) out.push_back(&spans[static_cast<size_t>(i)]);
  }
  return out;
}

bool outlivedItsOp(const RankTrace& trace, const Span& backend, int64_t t) {
  const auto& ops = trace.c10dOps;  // in time order
  auto it =
      std::upper_bound(ops.begin(), ops.end(), backend.begin, [](int64_t v, const Span& op) { return v < op.begin; });
  for (int looked = 0; it != ops.begin() && looked < 8; ++looked) {
    --it;
    if (it->thread == backend.thread && it->end >= backend.begin) return it->end < t;
  }
  return false;
}

const Step* stepAt(const RankTrace& trace, int64_t t) {
  auto it =
      std::upper_bound(trace.steps.begin(), trace.steps.end(), t, [](int64_t v, const Step& s) { return v < s.begin; });
  if (it == trace.steps.begin()) return nullptr;
  --it;
  return t <= it->end ? &*it : nullptr;
}

bool anyThreadInside(const RankTrace& trace, int64_t t, const std::string& prefix) {
  for (const auto& [thread, spans] : trace.threads) {
    for (const Span* s : spansAt(trace, thread, t)) {
      if (s->name.rfind(prefix, 0) == 0) return true;
    }
  }
  return false;
}

std::pair<int64_t, int64_t> stepWindow(const RankTrace& trace, size_t i) {
  const Step& s = trace.steps[i];
  if (!trace.stepsOnDevice) return {s.begin, s.end};
  // The GPU-side copy covers the step's kernels only: a host-bound job's device idles between
  // them, and that is step time too.
  const int64_t end = i + 1 < trace.steps.size() ? trace.steps[i + 1].deviceBegin : std::max(s.deviceEnd, s.end);
  return {s.deviceBegin, end};
}

int recordedStepAt(const RankTrace& trace, int64_t t) {
  const Step* step = stepAt(trace, t);
  return step ? step->number - trace.steps.front().number : -1;
}

bool inForwardOrBackward(const RankTrace& trace, int64_t thread, int64_t t) {
  if (thread != trace.mainThread) return false;
  const Step* step = stepAt(trace, t);
  return step && t < step->optimizerBegin;
}

const Span* ncclKernelOf(const RankTrace& trace, const Span& op) {
  auto it = std::lower_bound(trace.launches.begin(), trace.launches.end(), op.begin,
                             [](const Launch& l, int64_t t) { return l.at < t; });
  for (; it != trace.launches.end() && it->at <= op.end; ++it) {
    if (it->thread != op.thread) continue;
    const auto kernel = trace.ncclKernels.find(it->correlation);
    if (kernel != trace.ncclKernels.end()) return &kernel->second;
  }
  return nullptr;
}

}  // namespace shardscope::import::profiler
