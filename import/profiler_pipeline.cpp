#include "import/profiler_pipeline.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "config/modes.h"
#include "config/pipeline_schedule.h"
#include "import/profiler_pipeline_inferred.h"

namespace shardscope::import {

using config::PipeAction;
using config::PipeActionKind;
using profiler::startsWith;

namespace {

std::optional<PipeAction> computeActionOfText(const std::string& text) {
  auto action = config::parseActionText(text);
  if (action && config::isComputeAction(action->kind)) return action;
  return std::nullopt;
}

// "PP:(0F3;3B1)OVERLAP_F_B" (ScheduleDualPipeV's pair: one chunk's forward, then the other chunk's
// backward, run one after the other in one span) -> the two actions.
std::vector<PipeAction> pairOfOverlapText(const std::string& text) {
  const std::string suffix = ")OVERLAP_F_B";
  if (text.size() <= suffix.size() + 1 || text.front() != '(' ||
      text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return {};
  }
  const std::string inside = text.substr(1, text.size() - suffix.size() - 1);
  const size_t semicolon = inside.find(';');
  if (semicolon == std::string::npos) return {};
  const auto first = computeActionOfText(inside.substr(0, semicolon));
  const auto second = computeActionOfText(inside.substr(semicolon + 1));
  if (!first || !second) return {};
  return {*first, *second};
}

// "Forward 3" -> F of micro-batch 3 on `stage`; "PP:1I2" -> its action; "PP:(1F1;0B0)OVERLAP_F_B"
// -> its two; transfers and anything else: none.
std::vector<PipeAction> actionsOfSpan(const std::string& name, int stage) {
  if (startsWith(name, "PP:")) {
    const std::string text = name.substr(3);
    if (startsWith(text, "(")) return pairOfOverlapText(text);
    if (auto action = computeActionOfText(text)) return {*action};
    return {};
  }
  for (const auto& [prefix, kind] :
       {std::pair{"Forward ", PipeActionKind::Forward}, std::pair{"Backward ", PipeActionKind::Backward}}) {
    const std::string p = prefix;
    if (name.size() <= p.size() || name.size() > p.size() + 6 || !startsWith(name, prefix)) continue;
    const std::string digits = name.substr(p.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) return {};
    return {PipeAction{kind, stage, std::stoi(digits)}};
  }
  return {};
}

trace::Event actionEvent(const profiler::RankTrace& trace, const PipeAction& a, int64_t begin, int64_t end) {
  trace::Event e;
  e.kind = trace::EventKind::Compute;
  e.rank = trace.rank;
  const bool forward = a.kind == PipeActionKind::Forward;
  e.op = static_cast<uint8_t>(forward ? trace::ComputeKind::Forward : trace::ComputeKind::Backward);
  e.phase = static_cast<uint8_t>(forward ? trace::Phase::Forward : trace::Phase::Backward);
  e.beginNs = begin;
  e.endNs = std::max(end, begin);
  e.step = profiler::recordedStepAt(trace, begin);
  e.microBatch = a.microBatch + 1;  // a span's micro-batches count from 1, as the engine records them
  e.text = "stage " + std::to_string(a.stage);
  return e;
}

}  // namespace

namespace {

// Where a pair's backward began inside its span: the first of autograd's functions in it, on any
// thread of the rank (a GPU's backward runs on autograd's device thread). None found: the span's
// end (the whole span read as the forward's; the pair's backward then has no length).
int64_t backwardBeginIn(const profiler::RankTrace& trace, const profiler::Span& pair) {
  int64_t first = pair.end;
  for (const auto& [thread, t] : trace.threads) {
    // Sorted by begin (the index links parents so): from the first to begin after the pair's start.
    auto s = std::upper_bound(t.spans.begin(), t.spans.end(), pair.begin,
                              [](int64_t at, const profiler::Span& span) { return at < span.begin; });
    for (; s != t.spans.end() && s->begin < first; ++s) {
      if (startsWith(s->name, "autograd::engine::evaluate_function")) first = s->begin;
    }
  }
  return first;
}

// Each action of the rank with the part of its span that is its own ([begin, end): the whole span,
// or a pair's part of it), its thread's spans and the span's index among them; where the rank's
// schedule named no training action, the actions its order shows
// (import/profiler_pipeline_inferred.h), with no span of their own.
struct ActionPart {
  PipeAction action;
  int64_t begin = 0, end = 0;
  const std::vector<profiler::Span>* spans = nullptr;  // null: inferred
  size_t index = 0;
  bool inferred() const { return spans == nullptr; }
};

std::vector<ActionPart> actionParts(const profiler::RankTrace& trace) {
  std::vector<ActionPart> parts;
  for (const auto& [thread, t] : trace.threads) {
    for (size_t i = 0; i < t.spans.size(); ++i) {
      const auto actions = actionsOfSpan(t.spans[i].name, profiler::singleStageOf(trace));
      if (actions.size() == 1) parts.push_back({actions[0], t.spans[i].begin, t.spans[i].end, &t.spans, i});
      if (actions.size() != 2) continue;
      const int64_t middle = backwardBeginIn(trace, t.spans[i]);
      parts.push_back({actions[0], t.spans[i].begin, middle, &t.spans, i});
      parts.push_back({actions[1], middle, t.spans[i].end, &t.spans, i});
    }
  }
  // Labels with no backward among them are an evaluation's ("Forward i" of a forward-only
  // schedule): the training, if its schedule named nothing, is read from its order.
  const bool trains = std::any_of(parts.begin(), parts.end(),
                                  [](const ActionPart& p) { return p.action.kind != PipeActionKind::Forward; });
  if (trains) return parts;
  const auto inferred = inferUnlabelledActions(trace);
  if (inferred.empty()) return parts;
  parts.clear();
  for (const auto& a : inferred) parts.push_back({a.action, a.begin, a.end});
  return parts;
}

}  // namespace

namespace {

// An operator's span (aten::addmm, autograd::engine::evaluate_function: ..., a library's ns::op):
// what an action computes with. Not Python's own spans (with_stack's "nn.Module: Linear_0").
bool isOperator(const std::string& name) { return name.find("::") != std::string::npos && !isPointToPointName(name); }

struct OpsWindow {
  int64_t begin = 0, end = 0;
};

// Where the action's ops ran in [begin, end) on its thread: from the first operator inside it (not
// one inside a send's or receive's op) to the last one's end. The multi-stage runtime waits for a
// posted receive inside an action's span before its first op, in no span of its own, and a DualPipeV
// pair's backward waits for its gradient after the forward's last op. None found: [begin, end).
OpsWindow opsWithin(const std::vector<profiler::Span>& spans, size_t i, int64_t begin, int64_t end) {
  OpsWindow ops{end, begin};
  int64_t insideTransferOp = begin;
  for (size_t k = i + 1; k < spans.size() && spans[k].begin < end; ++k) {
    const profiler::Span& s = spans[k];
    if (s.begin < begin || s.begin < insideTransferOp) continue;
    // c10d's send or receive op: what runs inside it is the transfer's (a backend's span, e.g.
    // gloo:send, may outlive the op and the action: it bounds nothing).
    if (startsWith(s.name, "c10d::") && isPointToPointName(s.name)) insideTransferOp = s.end;
    if (!isOperator(s.name)) continue;
    ops.begin = std::min(ops.begin, s.begin);
    ops.end = std::max(ops.end, std::min(s.end, end));
  }
  return ops.begin < ops.end ? ops : OpsWindow{begin, end};
}

}  // namespace

bool readPipelineCompute(const profiler::RankTrace& trace, std::vector<trace::Event>& out) {
  bool backward = false;
  // On a GPU the kernels give the compute and the host's spans only bracket their launches (and a
  // backward's ops run on autograd's device thread): the action's span is kept whole.
  const bool hostComputes = trace.computeKernels.empty();
  for (const ActionPart& part : actionParts(trace)) {
    backward |= part.action.kind != PipeActionKind::Forward;
    // An inferred action is its operators' run already, with no send or receive inside.
    if (part.inferred()) {
      out.push_back(actionEvent(trace, part.action, part.begin, part.end));
      continue;
    }
    // The action's part of its span where its ops ran, less the sends and receives inside it: what
    // is left is its compute, in pieces.
    const auto& spans = *part.spans;
    const OpsWindow ops =
        hostComputes ? opsWithin(spans, part.index, part.begin, part.end) : OpsWindow{part.begin, part.end};
    int64_t from = ops.begin;
    for (size_t k = part.index + 1; k < spans.size() && spans[k].begin < ops.end; ++k) {
      if (!isPointToPointName(spans[k].name) || spans[k].end <= from) continue;
      if (spans[k].begin > from) out.push_back(actionEvent(trace, part.action, from, spans[k].begin));
      from = std::max(from, std::min(spans[k].end, ops.end));
    }
    if (ops.end > from) out.push_back(actionEvent(trace, part.action, from, ops.end));
  }
  return backward;
}

namespace {

trace::Event groupEvent(const profiler::RankTrace& trace, trace::GroupKind kind, int64_t at, int step,
                        std::string text) {
  trace::Event group;
  group.kind = trace::EventKind::Group;
  group.rank = trace.rank;
  group.op = static_cast<uint8_t>(kind);
  group.beginNs = group.endNs = at;
  group.step = step;
  group.text = std::move(text);
  return group;
}

}  // namespace

bool readPipelineMarks(const profiler::RankTrace& trace, std::vector<trace::Event>& out) {
  std::set<int> stepsWithActions;  // as recordedStepAt numbers them
  bool inferred = false;
  for (const ActionPart& part : actionParts(trace)) {
    inferred |= part.inferred();
    const int step = profiler::recordedStepAt(trace, part.inferred() ? part.begin : (*part.spans)[part.index].begin);
    stepsWithActions.insert(step);
    out.push_back(groupEvent(
        trace, part.action.kind == PipeActionKind::Forward ? trace::GroupKind::Forward : trace::GroupKind::Backward,
        part.begin, step, config::actionText(part.action)));
  }
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const int index = trace.steps[i].number - trace.steps.front().number;
    if (!stepsWithActions.count(index)) continue;
    out.push_back(
        groupEvent(trace, trace::GroupKind::Optimizer, trace.steps[i].optimizerBegin, index, "optimizer step"));
    trace::Event span;
    span.kind = trace::EventKind::Compute;
    span.rank = trace.rank;
    span.op = static_cast<uint8_t>(trace::ComputeKind::Step);
    std::tie(span.beginNs, span.endNs) = profiler::stepWindow(trace, i);
    span.endNs = std::max(span.endNs, span.beginNs);
    span.step = index;
    out.push_back(std::move(span));
  }
  return inferred;
}

namespace {

struct RankActions {
  std::set<int> stages;
  std::set<PipeActionKind> kinds;
  int microBatches = 0;
  bool backwardBeforeLastForward = false;  // in some step (1F1B's order, not GPipe's)
};

RankActions actionsOf(const std::vector<trace::Event>& events) {
  RankActions out;
  std::map<int32_t, int64_t> lastForward, firstBackward;  // per step
  for (const auto& e : events) {
    if (e.kind != trace::EventKind::Group) continue;
    const auto action = config::parseActionText(e.text);
    if (!action) continue;
    out.stages.insert(action->stage);
    out.kinds.insert(action->kind);
    out.microBatches = std::max(out.microBatches, action->microBatch + 1);
    if (action->kind == PipeActionKind::Forward) {
      lastForward[e.step] = std::max(lastForward[e.step], e.beginNs);
    } else {
      auto [it, added] = firstBackward.try_emplace(e.step, e.beginNs);
      if (!added) it->second = std::min(it->second, e.beginNs);
    }
  }
  for (const auto& [step, at] : firstBackward) {
    const auto f = lastForward.find(step);
    out.backwardBeforeLastForward |= f != lastForward.end() && at < f->second;
  }
  return out;
}

// What the actions show: W (zero bubble; V-shaped where rank 0 holds the first and last stages,
// and DualPipeV's V where whole backwards run too, its pairs'), several stages a rank
// (interleaved), else by their order: every forward of a step before its backwards is GPipe's, a
// backward between them 1F1B's.
config::PipelineSchedule scheduleOf(const std::vector<RankActions>& ranks, int pp) {
  const auto any = [&](auto predicate) { return std::any_of(ranks.begin(), ranks.end(), predicate); };
  if (any([](const RankActions& r) { return r.kinds.count(PipeActionKind::BackwardWeight) > 0; })) {
    const bool vShaped = ranks[0].stages.count(0) && ranks[0].stages.count(2 * pp - 1);
    if (!vShaped) return config::PipelineSchedule::ZeroBubble;
    const bool wholeBackwards = any([](const RankActions& r) { return r.kinds.count(PipeActionKind::Backward) > 0; });
    return wholeBackwards ? config::PipelineSchedule::DualPipeV : config::PipelineSchedule::Zbv;
  }
  if (any([](const RankActions& r) { return r.stages.size() > 1; })) return config::PipelineSchedule::Interleaved1F1B;
  if (any([](const RankActions& r) { return r.backwardBeforeLastForward; })) return config::PipelineSchedule::OneFOneB;
  return config::PipelineSchedule::GPipe;
}

}  // namespace

namespace {

// P: the pipeline ranks. The pipeline group's size where a trace named one; else, where every rank
// was traced, the stages their actions name over V; else the world (a job of pipeline ranks only).
// 0 where that is under 2 or the world does not lay the stages out as torchtitan's mesh does
// (config/pipeline_config.h: each stage's ranks one block, so a rank's first stage is
// rank / (world / P)): a mesh with pp inside dp, which the views cannot draw.
int pipelineRanksOf(const std::vector<std::vector<trace::Event>>& ranks, const std::vector<RankActions>& traced,
                    int stagesPerRank, int pipelineGroupSize) {
  const int world = static_cast<int>(ranks.size());
  int stages = 0;
  for (const auto& r : traced) stages = std::max(stages, *r.stages.rbegin() + 1);
  const bool everyRank = traced.size() == ranks.size();
  int pp = pipelineGroupSize > 0 ? pipelineGroupSize : everyRank ? stages / stagesPerRank : world;
  if (pipelineGroupSize <= 0 && everyRank && stages % stagesPerRank != 0) pp = 0;
  if (pp < 2 || world % pp != 0) return 0;
  size_t t = 0;
  for (int rank = 0; rank < world; ++rank) {
    if (ranks[static_cast<size_t>(rank)].empty()) continue;
    if (*traced[t++].stages.begin() != rank / (world / pp)) return 0;
  }
  return pp;
}

}  // namespace

std::optional<std::string> recognisePipeline(const std::vector<std::vector<trace::Event>>& ranks, int pipelineGroupSize,
                                             config::RunConfig& config) {
  std::vector<RankActions> traced;
  int stagesPerRank = 1, microBatches = 0;
  for (const auto& events : ranks) {
    if (events.empty()) continue;
    traced.push_back(actionsOf(events));
    if (traced.back().stages.empty()) return std::nullopt;  // a traced rank ran no action: not a pipeline of them all
    stagesPerRank = std::max(stagesPerRank, static_cast<int>(traced.back().stages.size()));
    microBatches = std::max(microBatches, traced.back().microBatches);
  }
  if (traced.empty() || ranks.size() < 2) return std::nullopt;
  const int world = static_cast<int>(ranks.size());
  const int pp = pipelineRanksOf(ranks, traced, stagesPerRank, pipelineGroupSize);
  if (pp == 0) return std::nullopt;
  config.pp = pp;
  config.stagesPerRank = stagesPerRank;
  config.microbatches = microBatches;
  config.schedule = scheduleOf(traced, config.pp);
  const std::string perStage = world > config.pp ? ", " + std::to_string(world / config.pp) + " a stage" : "";
  return "a pipeline of " + std::to_string(config.pp * stagesPerRank) + " stages on " + std::to_string(world) +
         " ranks" + perStage + " (torch.distributed.pipelining), " + std::to_string(microBatches) +
         " micro-batches a step in " + config::modeName(config.schedule) + "'s order";
}

}  // namespace shardscope::import
