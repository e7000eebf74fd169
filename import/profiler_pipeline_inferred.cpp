#include "import/profiler_pipeline_inferred.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <optional>
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

// Where a run of the training thread's operators computed something a backward went back through:
// from the first to the last of its outermost ops that hold an op whose function is among `keys`
// (its linear, not a copy before it nor a loss's ones_like after it; the batch's split too where
// the stage's graph slices). None: nothing in it was differentiated.
std::optional<Run> differentiatedPart(const profiler::RankTrace& trace, const Run& run,
                                      const std::set<std::string>& keys) {
  const auto& t = trace.threads.at(trace.mainThread);
  std::optional<Run> part;
  for (size_t k = firstFrom(t, run.begin); k < t.spans.size() && t.spans[k].begin < run.end; ++k) {
    if (!isOperatorName(t.spans[k].name) || !keys.count(opKey(t.spans[k].name, false))) continue;
    size_t outer = k;  // up through the operators around it that are still open and in the run
    for (int p = t.parent[outer]; p >= 0; p = t.parent[static_cast<size_t>(p)]) {
      const profiler::Span& around = t.spans[static_cast<size_t>(p)];
      if (!isOperatorName(around.name) || around.begin < run.begin || around.end < t.spans[k].begin) break;
      outer = static_cast<size_t>(p);
    }
    const profiler::Span& s = t.spans[outer];
    if (!part) part = Run{RunKind::Forward, s.begin, s.end};
    part->begin = std::min(part->begin, s.begin);
    part->end = std::max(part->end, s.end);
  }
  return part;
}

// Whether every action touches a send or receive: the run before or after it, among the actions
// and transfers, is one. A pipeline stage's actions wait on their neighbours' (the first stage's
// forward sends, the last stage's backward sends, a middle one's receive); a data-parallel job
// accumulating micro-batches between one exchange a step does not.
bool everyActionTouchesATransfer(const std::vector<Run>& sequence) {
  for (size_t i = 0; i < sequence.size(); ++i) {
    if (sequence[i].kind == RunKind::Transfer) continue;
    const bool before = i > 0 && sequence[i - 1].kind == RunKind::Transfer;
    const bool after = i + 1 < sequence.size() && sequence[i + 1].kind == RunKind::Transfer;
    if (!before && !after) return false;
  }
  return true;
}

enum class StepRead { Actions, NoBackward, Unreadable };

// Drops the first forwards among the first `within` runs of `sequence` while there are more
// forwards than `backwards`.
void dropFirstForwards(std::vector<Run>& sequence, size_t within, size_t backwards, size_t& forwards) {
  for (size_t i = 0; forwards > backwards && i < within && i < sequence.size();) {
    if (sequence[i].kind != RunKind::Forward) {
      ++i;
      continue;
    }
    sequence.erase(sequence.begin() + static_cast<std::ptrdiff_t>(i));
    --forwards;
    --within;
  }
}

// The step's backwards, where each ran `graph`'s functions (set by the first; a backward through
// other functions is no stage's micro-batch): false where one did not.
bool backwardsOf(const profiler::RankTrace& trace, const std::vector<Run>& runs, std::vector<std::string>& graph,
                 std::vector<Run>& backwards) {
  for (const Run& r : runs) {
    if (r.kind != RunKind::Backward) continue;
    backwards.push_back(r);
    const auto functions = functionsIn(trace, r);
    if (graph.empty()) graph = functions;
    if (functions != graph) return false;
  }
  return true;
}

// One step's actions. A step with no backward (an evaluation's) has none; one whose forwards and
// backwards do not pair up, at least two of each, every one beside a transfer, is Unreadable (then
// none of the rank's are read).
StepRead addStepActions(const profiler::RankTrace& trace, const profiler::Step& step, std::vector<std::string>& graph,
                        std::vector<InferredAction>& out) {
  const std::vector<Run> runs = runsOf(thingsRunIn(trace, step.begin, step.optimizerBegin));
  std::vector<Run> backwards;
  if (!backwardsOf(trace, runs, graph, backwards)) return StepRead::Unreadable;
  if (backwards.empty()) return StepRead::NoBackward;
  std::set<std::string> keys;  // the ops those functions go back through
  for (const auto& f : graph) {
    if (auto key = opKey(f, true); !key.empty()) keys.insert(std::move(key));
  }
  // The actions and transfers in order: forwards cut to what they differentiated, backwards whole.
  std::vector<Run> sequence;
  size_t forwards = 0;
  for (const Run& r : runs) {
    const auto part = r.kind == RunKind::Forward && r.begin < backwards.back().begin
                          ? differentiatedPart(trace, r, keys)
                          : std::nullopt;
    if (r.kind != RunKind::Forward || part) sequence.push_back(part ? *part : r);
    forwards += part ? 1 : 0;
  }
  // Forwards beyond the backwards' count, the first ones, before the step's first send or receive
  // or its first backward, whichever is later: the step's own work (the last stage's split of the
  // target, a loss logged after the step before), an evaluation's (the schedule's eval() before
  // the training step, in its optimizer window where the job calls no prof.step(): forwards with
  // their sends and receives) or, in the first step, shape inference's (the stage run once more on
  // meta tensors, after its first exchange), each before any micro-batch's.
  const auto firstOf = [&](RunKind kind) {
    return static_cast<size_t>(
        std::find_if(sequence.begin(), sequence.end(), [&](const Run& r) { return r.kind == kind; }) -
        sequence.begin());
  };
  dropFirstForwards(sequence, std::max(firstOf(RunKind::Transfer), firstOf(RunKind::Backward)), backwards.size(),
                    forwards);
  if (forwards != backwards.size() || forwards < 2 || !everyActionTouchesATransfer(sequence)) {
    return StepRead::Unreadable;
  }
  const int stage = profiler::singleStageOf(trace);
  int f = 0, b = 0;  // micro-batches so far, of each
  for (const Run& r : sequence) {
    if (r.kind == RunKind::Transfer) continue;
    const bool forward = r.kind == RunKind::Forward;
    // A micro-batch's forward comes before its backward.
    if (!forward && b >= f) return StepRead::Unreadable;
    const config::PipeAction a{forward ? config::PipeActionKind::Forward : config::PipeActionKind::Backward, stage,
                               forward ? f++ : b++};
    out.push_back({a, r.begin, r.end});
  }
  return StepRead::Actions;
}

}  // namespace

std::vector<InferredAction> inferUnlabelledActions(const profiler::RankTrace& trace) {
  if (trace.rank < 0 || !trace.threads.count(trace.mainThread) || trace.stepsFromWholeTrace) return {};
  std::vector<InferredAction> out;
  std::vector<std::string> graph;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    if (addStepActions(trace, trace.steps[i], graph, out) == StepRead::Unreadable) return {};
  }
  return out;
}

}  // namespace shardscope::import
