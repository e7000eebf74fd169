#include "import/profiler_trace_index.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "files/user_json.h"

namespace shardscope::trace::profiler {

namespace {

constexpr int kSupportedSchema = 1;  // torch.profiler's Chrome trace "schemaVersion" (PyTorch 2.x)

int64_t idOf(const nlohmann::json& e, const char* key) {
  if (!e.contains(key)) return 0;
  const auto& v = e[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  // The profiler's own rows are named ("PyTorch Profiler (0)"): a stable number for the name.
  return v.is_string() ? static_cast<int64_t>(std::hash<std::string>{}(v.get<std::string>()) >> 1) : 0;
}

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool isHostSpan(const std::string& category) {
  return category == "cpu_op" || category == "user_annotation" || category == "python_function";
}

bool isBackendSpan(const std::string& name) { return startsWith(name, "gloo:") || startsWith(name, "nccl:"); }

int64_t correlationOf(const nlohmann::json& e) {
  if (!e.contains("args") || !e["args"].is_object() || !e["args"].contains("correlation")) return -1;
  const auto& c = e["args"]["correlation"];
  return c.is_number_integer() ? c.get<int64_t>() : -1;
}

// A kernel launch on the host, or an NCCL kernel on the device: kept (true) for ncclKernelOf.
bool takeGpuEvent(const nlohmann::json& e, const std::string& name, const std::string& cat, RankTrace& out) {
  const bool launch = (cat == "cuda_runtime" || cat == "cuda_driver") && name.find("LaunchKernel") != std::string::npos;
  const bool ncclKernel = cat == "kernel" && startsWith(name, "nccl");
  if (!launch && !ncclKernel) return false;
  const int64_t correlation = correlationOf(e);
  if (correlation < 0 || !e.contains("dur") || !e["dur"].is_number()) return true;
  const int64_t begin = nanos(e["ts"].get<double>());
  if (launch) {
    out.launches.push_back({threadOf(e), begin, correlation});
  } else {
    Span kernel{name, begin, begin + static_cast<int64_t>(std::llround(e["dur"].get<double>() * 1e3)), threadOf(e),
                e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr};
    out.ncclKernels.emplace(correlation, std::move(kernel));
  }
  return true;
}

// The fields of a memory event that profiler_memory.cpp reads as numbers: one of another kind is
// refused at the event, by its index and name.
const std::vector<files::ExpectedField> kMemoryArgs = {
    {"Device Type", files::JsonKind::Number},     {"Device Id", files::JsonKind::Number},
    {"Bytes", files::JsonKind::Number},           {"Addr", files::JsonKind::Number},
    {"Total Allocated", files::JsonKind::Number}, {"Total Reserved", files::JsonKind::Number}};

// One event, if it is one this reader takes, into its list; false (with `error`) for one whose
// fields a reader could not read.
bool take(const nlohmann::json& e, size_t index, RankTrace& out, std::vector<Span>& steps, std::string& error) {
  if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("ts") || !e["ts"].is_number()) {
    return true;
  }
  const std::string& name = e["name"].get_ref<const std::string&>();
  const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
  const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
  if (ph == "i" && name == "[memory]") {
    if (!e.contains("args") || !e["args"].is_object()) {
      ++out.skippedEvents;
      return true;
    }
    if (auto wrong = files::wrongKindOfField(e["args"], kMemoryArgs, "args."); !wrong.empty()) {
      error = "has a malformed event: in its event " + std::to_string(index) + " (a [memory] event), " + wrong;
      return false;
    }
    out.memory.push_back(&e);
    return true;
  }
  if (ph == "X" && takeGpuEvent(e, name, cat, out)) return true;
  if (ph != "X" || !isHostSpan(cat) || !e.contains("dur") || !e["dur"].is_number()) return true;
  Span s{name, nanos(e["ts"].get<double>()), 0, threadOf(e), e.contains("args") ? &e["args"] : nullptr};
  s.end = s.begin + static_cast<int64_t>(std::llround(e["dur"].get<double>() * 1e3));
  if (startsWith(name, "ProfilerStep#") && cat == "user_annotation") steps.push_back(s);
  if (startsWith(name, "c10d::")) out.c10dOps.push_back(s);
  if (isBackendSpan(name)) out.backendSpans.push_back(s);
  out.threads[s.thread].spans.push_back(std::move(s));
  return true;
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

// The steps with their numbers and where their optimizer steps begin (a span on any thread).
void indexSteps(std::vector<Span>& steps, RankTrace& out) {
  if (steps.empty()) {
    stepsFromOptimizerSteps(out);
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

}  // namespace

// +1 keeps the first event off 0, which RunRecording reads as "no timestamp".
int64_t nanos(double micros) { return static_cast<int64_t>(std::llround(micros * 1e3)) + 1; }

int64_t threadOf(const nlohmann::json& event) {
  return static_cast<int64_t>(std::hash<int64_t>{}(idOf(event, "pid")) * 31 + std::hash<int64_t>{}(idOf(event, "tid")));
}

std::string indexTrace(const nlohmann::json& root, RankTrace& out) {
  if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
    return "is not a torch.profiler trace (no traceEvents array): write it with torch.profiler's "
           "export_chrome_trace, e.g. by python/shardscope_record";
  }
  const int schema = root.contains("schemaVersion") && root["schemaVersion"].is_number_integer()
                         ? root["schemaVersion"].get<int>()
                         : -1;
  if (schema != kSupportedSchema) {
    return "has schemaVersion " + std::to_string(schema) + "; this shardscope reads torch.profiler's schema " +
           std::to_string(kSupportedSchema) + " (PyTorch 2.x)";
  }
  // Kineto writes times as microseconds after this (an epoch time in ns); older traces, as times
  // since the epoch (0 here).
  if (root.contains("baseTimeNanoseconds") && root["baseTimeNanoseconds"].is_number_unsigned() &&
      root["baseTimeNanoseconds"].get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) {
    out.baseTimeNs = root["baseTimeNanoseconds"].get<int64_t>();
  }
  if (root.contains("distributedInfo") && root["distributedInfo"].is_object()) {
    out.rank = root["distributedInfo"].value("rank", -1);
    out.world = root["distributedInfo"].value("world_size", 0);
  }
  std::vector<Span> steps;
  size_t index = 0;
  for (const auto& e : root["traceEvents"]) {
    if (std::string error; !take(e, ++index, out, steps, error)) return error;  // from 1, as trace_reader counts
  }
  for (auto* list : {&out.c10dOps, &out.backendSpans}) std::sort(list->begin(), list->end(), byBegin);
  for (auto& [thread, t] : out.threads) linkParents(t);
  std::sort(out.launches.begin(), out.launches.end(), [](const Launch& a, const Launch& b) { return a.at < b.at; });
  indexSteps(steps, out);
  std::stable_sort(out.memory.begin(), out.memory.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return (*a)["ts"].get<double>() < (*b)["ts"].get<double>();
  });
  return "";
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
  while (i >= 0 && spans[static_cast<size_t>(i)].end < t)
    i = parent[static_cast<size_t>(i)];  // ended: its parent may not have
  for (; i >= 0; i = parent[static_cast<size_t>(i)]) out.push_back(&spans[static_cast<size_t>(i)]);
  return out;
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

}  // namespace shardscope::trace::profiler
