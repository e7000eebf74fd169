#include "import/profiler_pipeline_inferred.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

namespace shardscope::import {

using profiler::startsWith;

bool isPointToPointName(std::string_view name) {
  for (const char* p :
       {"c10d::send", "c10d::recv", "c10d::batch_isend_irecv", "gloo:send", "gloo:recv", "nccl:send", "nccl:recv"}) {
    if (startsWith(name, p)) return true;
  }
  return false;
}

namespace {

enum class RunKind { Forward, Backward, Transfer };

// One thing the rank ran in a step, or a run of them of one kind (a forward's, a backward's).
struct Run {
  RunKind kind;
  int64_t begin = 0, end = 0;
};

bool isAutogradFunction(std::string_view name) { return startsWith(name, "autograd::engine::evaluate_function"); }
bool isOperatorName(std::string_view name) {
  return name.find("::") != std::string_view::npos && !isPointToPointName(name);
}

// Inside an operator (its own work), c10d's send or receive, autograd's function or an optimizer's
// span. Not a backend's span (gloo:send): it lasts until the transfer completes, over whatever the
// thread runs meanwhile; and such a span's own parent (its c10d::send) may have ended before `k`
// began, so only an ancestor that is still open at k's begin counts.
bool insideWhatIsNotAForward(const profiler::ThreadSpans& t, size_t k) {
  for (int p = t.parent[k]; p >= 0; p = t.parent[static_cast<size_t>(p)]) {
    const profiler::Span& around = t.spans[static_cast<size_t>(p)];
    if (around.end < t.spans[k].begin) continue;
    if (isOperatorName(around.name) || startsWith(around.name, "Optimizer.")) return true;
    if (startsWith(around.name, "c10d::") && isPointToPointName(around.name)) return true;
  }
  return false;
}

bool insideAutogradFunction(const profiler::ThreadSpans& t, size_t k) {
  for (int p = t.parent[k]; p >= 0; p = t.parent[static_cast<size_t>(p)]) {
    const profiler::Span& around = t.spans[static_cast<size_t>(p)];
    if (around.end >= t.spans[k].begin && isAutogradFunction(around.name)) return true;
  }
  return false;
}

// The first of a thread's spans (sorted by begin) that begins at or after `at`.
size_t firstFrom(const profiler::ThreadSpans& t, int64_t at) {
  return static_cast<size_t>(std::lower_bound(t.spans.begin(), t.spans.end(), at,
                                              [](const profiler::Span& s, int64_t v) { return s.begin < v; }) -
                             t.spans.begin());
}

// What the step [begin, end) ran, by begin: the training thread's outermost operators other than
// c10d's (forward) and c10d's sends and receives (transfer), and autograd's outermost functions on
// any thread.
std::vector<Run> thingsRunIn(const profiler::RankTrace& trace, int64_t begin, int64_t end) {
  std::vector<Run> out;
  for (const auto& [thread, t] : trace.threads) {
    const bool training = thread == trace.mainThread;
    for (size_t k = firstFrom(t, begin); k < t.spans.size() && t.spans[k].begin < end; ++k) {
      const profiler::Span& s = t.spans[k];
      if (isAutogradFunction(s.name)) {
        if (!insideAutogradFunction(t, k)) out.push_back({RunKind::Backward, s.begin, s.end});
      } else if (training && startsWith(s.name, "c10d::") && isPointToPointName(s.name)) {
        if (!insideWhatIsNotAForward(t, k)) out.push_back({RunKind::Transfer, s.begin, s.end});
      } else if (training && isOperatorName(s.name) && !startsWith(s.name, "c10d::") &&
                 !insideWhatIsNotAForward(t, k)) {  // a collective (a data-parallel stage's) computes nothing
        out.push_back({RunKind::Forward, s.begin, s.end});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  return out;
}

// Consecutive forwards or backwards as one run; a transfer ends one and is kept (the step's proof
// that it is a pipeline's).
std::vector<Run> runsOf(const std::vector<Run>& things) {
  std::vector<Run> runs;
  bool open = false;
  for (const Run& r : things) {
    if (open && r.kind == runs.back().kind && r.kind != RunKind::Transfer) {
      runs.back().end = std::max(runs.back().end, r.end);
      continue;
    }
    runs.push_back(r);
    open = r.kind != RunKind::Transfer;
  }
  return runs;
}

// An op's or a backward function's name as both share it: "aten::native_layer_norm" and
// "autograd::engine::evaluate_function: NativeLayerNormBackward0" -> "nativelayernorm"; empty for a
// function that is no op's backward (AccumulateGrad).
std::string opKey(std::string_view name, bool backward) {
  if (backward) {
    const size_t colon = name.rfind(": ");
    name = colon == std::string_view::npos ? name : name.substr(colon + 2);
    while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
    if (name.size() <= 8 || name.substr(name.size() - 8) != "Backward") return "";
    name.remove_suffix(8);
  } else {
    const size_t colon = name.rfind("::");
    name = colon == std::string_view::npos ? name : name.substr(colon + 2);
  }
  std::string key;
  for (char c : name) {
    if (c != '_') key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

}  // namespace

namespace {

// The functions autograd ran in a backward run (on any thread), sorted: one micro-batch's backward
// through a stage runs the same ones as every other's.
std::vector<std::string> functionsIn(const profiler::RankTrace& trace, const Run& run) {
  std::vector<std::string> names;
  for (const auto& [thread, t] : trace.threads) {
    for (size_t k = firstFrom(t, run.begin); k < t.spans.size() && t.spans[k].begin < run.end; ++k) {
      if (isAutogradFunction(t.spans[k].name)) names.push_back(t.spans[k].name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Whether a run of the training thread's operators computed something a backward went back
// through: one of its ops, at any depth, has its function among `keys`.
bool hasABackward(const profiler::RankTrace& trace, const Run& run, const std::set<std::string>& keys) {
  const auto& t = trace.threads.at(trace.mainThread);
  for (size_t k = firstFrom(t, run.begin); k < t.spans.size() && t.spans[k].begin <= run.end; ++k) {
    if (isOperatorName(t.spans[k].name) && keys.count(opKey(t.spans[k].name, false))) return true;
  }
  return false;
}

// One step's actions, or false where they do not pair up (then none of the rank's are read).
// `graph`: the functions every backward ran (set by the first; a backward through other functions,
// such as a ring attention's halves between its transfers, is no stage's micro-batch).
bool addStepActions(const profiler::RankTrace& trace, int64_t begin, int64_t end, std::vector<std::string>& graph,
                    std::vector<InferredAction>& out) {
  const std::vector<Run> runs = runsOf(thingsRunIn(trace, begin, end));
  std::vector<Run> forwards, backwards;
  std::set<std::string> keys;  // the ops those functions go back through
  bool transfers = false;
  for (const Run& r : runs) {
    transfers |= r.kind == RunKind::Transfer;
    if (r.kind != RunKind::Backward) continue;
    backwards.push_back(r);
    const auto functions = functionsIn(trace, r);
    if (graph.empty()) graph = functions;
    if (functions != graph) return false;
  }
  if (!transfers || backwards.empty()) return false;
  for (const auto& f : graph) {
    if (auto key = opKey(f, true); !key.empty()) keys.insert(std::move(key));
  }
  for (const Run& r : runs) {
    if (r.kind == RunKind::Forward && r.begin < backwards.back().begin && hasABackward(trace, r, keys)) {
      forwards.push_back(r);
    }
  }
  // The first step's shape inference runs the stage's forward once more (on meta tensors), before
  // any micro-batch's: a step's first forwards beyond its backwards' count are not micro-batches.
  if (forwards.size() > backwards.size()) forwards.erase(forwards.begin(), forwards.end() - backwards.size());
  if (forwards.size() != backwards.size()) return false;
  const int stage = profiler::singleStageOf(trace);
  for (size_t m = 0; m < forwards.size(); ++m) {
    if (forwards[m].begin >= backwards[m].begin) return false;  // a micro-batch's forward comes first
    const int micro = static_cast<int>(m);
    out.push_back({{config::PipeActionKind::Forward, stage, micro}, forwards[m].begin, forwards[m].end});
    out.push_back({{config::PipeActionKind::Backward, stage, micro}, backwards[m].begin, backwards[m].end});
  }
  return true;
}

}  // namespace

std::vector<InferredAction> inferUnlabelledActions(const profiler::RankTrace& trace) {
  if (trace.rank < 0 || !trace.threads.count(trace.mainThread) || trace.stepsFromWholeTrace) return {};
  std::vector<InferredAction> out;
  std::vector<std::string> graph;
  for (const auto& step : trace.steps) {
    if (!addStepActions(trace, step.begin, step.optimizerBegin, graph, out)) return {};
  }
  return out;
}

}  // namespace shardscope::import
