#include "config/pipeline_schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace shardscope::config {

namespace {

using Kind = PipeActionKind;

bool isInterleaved(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::Interleaved1F1B || schedule == PipelineSchedule::ZeroBubble;
}

std::string scheduleName(PipelineSchedule schedule) { return std::string(modeName(schedule)); }

// Micro-batches go round the ranks in rounds of this many (PyTorch's microbatches_per_round):
// M when M < P, else M over the rounds max(1, M / P).
int microBatchesPerRound(const PipelineShape& shape) {
  return shape.microBatches / std::max(1, shape.microBatches / shape.ranks);
}

std::vector<PipeAction> gpipeActions(const PipelineShape& shape, int rank) {
  std::vector<PipeAction> out;
  for (int m = 0; m < shape.microBatches; ++m) out.push_back({Kind::Forward, rank, m});
  for (int m = 0; m < shape.microBatches; ++m) out.push_back({Kind::Backward, rank, m});
  return out;
}

// P - r - 1 forwards fill the pipe; then a forward and the oldest backward in turn; then the
// backwards left. Rank r so holds at most P - r micro-batches' activations.
std::vector<PipeAction> oneFOneBActions(const PipelineShape& shape, int rank) {
  const int m = shape.microBatches;
  const int warmup = std::min(m, shape.ranks - rank - 1);
  std::vector<PipeAction> out;
  int forwards = 0, backwards = 0;
  while (forwards < warmup) out.push_back({Kind::Forward, rank, forwards++});
  while (forwards < m) {
    out.push_back({Kind::Forward, rank, forwards++});
    out.push_back({Kind::Backward, rank, backwards++});
  }
  while (backwards < m) out.push_back({Kind::Backward, rank, backwards++});
  return out;
}

// The looped schedules' one rule, with the ops numbered 0 .. M*V - 1 in each direction: op k's
// forward runs on local stage (k / round) % V, its backward on the stages taken in reverse; the
// warm-up is the ops the last rank runs before its first backward, (V-1) * round, plus `hop` per
// rank between it and the last. Zero bubble (hop 1) splits each backward into I, and runs the Ws
// once rank r has run r backwards, each behind the one before, oldest first.
std::vector<PipeAction> loopedActions(const PipelineShape& shape, int rank, int hop, bool zeroBubble) {
  const int p = shape.ranks, v = shape.stagesPerRank, ops = shape.microBatches * v;
  const int round = microBatchesPerRound(shape);
  const int warmup = std::min((v - 1) * round + hop * (p - 1 - rank), ops);
  auto forwardStage = [&](int op) { return ((op / round) % v) * p + rank; };
  auto backwardStage = [&](int op) { return (v - 1 - ((op - warmup) / round) % v) * p + rank; };
  std::map<int, int> forwardsOf, backwardsOf, weightsOf;  // by stage: micro-batches run so far
  std::vector<int> backwardOps;                           // the ops whose backward has run, in order
  size_t weightsRun = 0;
  std::vector<PipeAction> out;
  auto backward = [&](int op) {
    const int stage = backwardStage(op);
    out.push_back({zeroBubble ? Kind::BackwardInput : Kind::Backward, stage, backwardsOf[stage]++});
    backwardOps.push_back(op);
  };
  auto weight = [&] {
    const int stage = backwardStage(backwardOps[weightsRun++]);
    out.push_back({Kind::BackwardWeight, stage, weightsOf[stage]++});
  };
  for (int op = 0; op < ops + warmup; ++op) {
    if (op < ops) {
      const int stage = forwardStage(op);
      out.push_back({Kind::Forward, stage, forwardsOf[stage]++});
    }
    if (op < warmup) continue;
    backward(op);
    if (zeroBubble && op - warmup >= rank) weight();
  }
  while (zeroBubble && weightsRun < backwardOps.size()) weight();
  return out;
}

// ZB-V: rank r holds stage r (chunk 0, going down the V) and 2P - 1 - r (chunk 1, coming back up).
// Its warm-up fills chunk 0, then alternates the chunks, then runs chunk 1's first backwards whole;
// the steady phase runs F, I, W on chunk 0 then on chunk 1; the cool-down runs the Is the stages
// before wait for, and the Ws last. It is planned for at least 2P - 1 micro-batches; with fewer,
// the actions of the missing ones are left out.
std::vector<PipeAction> zbvActions(const PipelineShape& shape, int rank) {
  const int p = shape.ranks, planned = std::max(2 * p - 1, shape.microBatches);
  const int down = rank, up = 2 * p - 1 - rank;
  int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  std::vector<PipeAction> out;
  auto add = [&](Kind kind, int stage, int microBatch) { out.push_back({kind, stage, microBatch}); };
  for (int i = 0; i < 2 * (p - rank) - 1; ++i) add(Kind::Forward, down, f0++);
  for (int i = 0; i < rank; ++i) {
    add(Kind::Forward, up, f1++);
    add(Kind::Forward, down, f0++);
  }
  for (int i = 0; i < p - rank; ++i, ++b1) {
    add(Kind::Forward, up, f1++);
    add(Kind::BackwardInput, up, b1);
    add(Kind::BackwardWeight, up, b1);
  }
  while (f1 < f0 || f0 < planned) {
    if (f0 < planned) add(Kind::Forward, down, f0++);
    add(Kind::BackwardInput, down, b0);
    add(Kind::BackwardWeight, down, b0++);
    add(Kind::Forward, up, f1++);
    add(Kind::BackwardInput, up, b1);
    add(Kind::BackwardWeight, up, b1++);
  }
  int w0 = b0, w1 = b1;
  for (int i = 0; i < rank; ++i) {
    add(Kind::BackwardInput, down, b0++);
    add(Kind::BackwardInput, up, b1++);
  }
  for (int i = 0; i < p - rank; ++i) {
    add(Kind::BackwardInput, down, b0++);
    add(Kind::BackwardWeight, down, w0++);
  }
  while (w1 < b1) add(Kind::BackwardWeight, up, w1++);
  while (w0 < b0) add(Kind::BackwardWeight, down, w0++);
  out.erase(
      std::remove_if(out.begin(), out.end(), [&](const PipeAction& a) { return a.microBatch >= shape.microBatches; }),
      out.end());
  return out;
}

// DualPipeV's lists are built by counting, as PyTorch's class builds them: each (stage, kind) its
// next micro-batch (a whole backward counts as an I and a W), and the Ws of the Is run so far
// waiting in a queue, oldest first.
class DualPipeVList {
 public:
  void add(Kind kind, int stage) {
    const Kind counted = kind == Kind::Backward ? Kind::BackwardInput : kind;
    const int microBatch = next_[{stage, counted}]++;
    out_.push_back({kind, stage, microBatch});
    if (kind == Kind::Backward) ++next_[{stage, Kind::BackwardWeight}];
    if (kind == Kind::BackwardInput) weights_.push_back({stage, microBatch});
  }
  // One of PyTorch's OVERLAP_F_B: a forward of one chunk, a whole backward of the other.
  void overlap(int forwardStage, int backwardStage) {
    add(Kind::Forward, forwardStage);
    out_.back().pairedWithNext = true;
    add(Kind::Backward, backwardStage);
  }
  void weightIfWaiting() {
    if (weights_.empty()) return;
    const auto [stage, microBatch] = weights_.front();
    weights_.erase(weights_.begin());
    out_.push_back({Kind::BackwardWeight, stage, microBatch});
  }
  std::vector<PipeAction> take() { return std::move(out_); }

 private:
  std::map<std::pair<int, Kind>, int> next_;
  std::vector<std::pair<int, int>> weights_;  // (stage, micro-batch) of each I whose W has not run
  std::vector<PipeAction> out_;
};

// DualPipeV on zbv's V (rank r: chunk 0 = stage r, chunk 1 = stage 2P - 1 - r), in PyTorch's 8
// phases: forwards of chunk 0; of both chunks in turn; chunk 1's I, W and F; the main phase, each
// chunk's forward paired with the other's backward; chunk 1's backward beside a pair; both chunks'
// backwards, split into I from the middle on; chunk 0's backwards behind the waiting Ws; the Ws left.
std::vector<PipeAction> dualPipeVActions(const PipelineShape& shape, int rank) {
  const int p = shape.ranks, m = shape.microBatches;
  const int chunk0 = rank, chunk1 = 2 * p - 1 - rank;
  DualPipeVList list;
  for (int i = 0; i < 2 * (p - rank - 1); ++i) list.add(Kind::Forward, chunk0);
  for (int i = 0; i < rank + 1; ++i) {
    list.add(Kind::Forward, chunk0);
    list.add(Kind::Forward, chunk1);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    list.add(Kind::BackwardInput, chunk1);
    list.weightIfWaiting();
    list.add(Kind::Forward, chunk1);
  }
  for (int i = 0; i < m - 2 * p + rank + 1; ++i) {
    if (i == 0 && rank == p - 1) {  // not paired, as PyTorch's, to shrink the bubble further
      list.add(Kind::Forward, chunk0);
      list.add(Kind::Backward, chunk1);
    } else {
      list.overlap(chunk0, chunk1);
    }
    list.overlap(chunk1, chunk0);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    list.add(Kind::Backward, chunk1);
    list.overlap(chunk1, chunk0);
  }
  bool split = false;
  for (int i = 0; i < rank + 1; ++i) {
    if (i == (rank + 1) / 2 && rank % 2 == 1) split = true;
    list.add(split ? Kind::BackwardInput : Kind::Backward, chunk1);
    if (i == (rank + 1) / 2 && rank % 2 == 0) split = true;
    list.add(split ? Kind::BackwardInput : Kind::Backward, chunk0);
  }
  for (int i = 0; i < p - rank - 1; ++i) {
    list.weightIfWaiting();
    list.add(split ? Kind::BackwardInput : Kind::Backward, chunk0);
  }
  for (int i = 0; i < rank + 1; ++i) list.weightIfWaiting();
  return list.take();
}

const char* kindText(Kind kind) {
  switch (kind) {
    case Kind::Forward:
      return "F";
    case Kind::Backward:
      return "B";
    case Kind::BackwardInput:
      return "I";
    case Kind::BackwardWeight:
      return "W";
    case Kind::SendActivation:
      return "SEND_F";
    case Kind::RecvActivation:
      return "RECV_F";
    case Kind::SendGradient:
      return "SEND_B";
    case Kind::RecvGradient:
      return "RECV_B";
  }
  return "?";
}

}  // namespace

std::optional<std::string> pipelineShapeProblem(const PipelineShape& shape) {
  const std::string name = scheduleName(shape.schedule);
  const int v = shape.stagesPerRank;
  const bool oneStagePerRank = !loopsOverStages(shape.schedule);
  if (oneStagePerRank && v != 1) {
    return "--stages-per-rank " + std::to_string(v) + " with --schedule " + name +
           ", which runs one stage per rank. Drop --stages-per-rank, or pick --schedule interleaved_1f1b, "
           "zero_bubble, zbv or dualpipev.";
  }
  if (isInterleaved(shape.schedule) && v < 2) {
    return "--schedule " + name + " loops each rank over several stages; --stages-per-rank is " + std::to_string(v) +
           ". Pass --stages-per-rank 2 or more.";
  }
  if (foldsIntoAV(shape.schedule) && v != 2) {
    return "--schedule " + name + " folds the stages into a V, two per rank; --stages-per-rank is " +
           std::to_string(v) + ". Pass --stages-per-rank 2.";
  }
  if (shape.schedule == PipelineSchedule::DualPipeV && shape.microBatches < shape.stages()) {
    return "--microbatches " + std::to_string(shape.microBatches) + " with --schedule dualpipev over --pp " +
           std::to_string(shape.ranks) + ": it needs at least as many micro-batches as stages (" +
           std::to_string(shape.stages()) + "), as PyTorch's ScheduleDualPipeV. Pass --microbatches " +
           std::to_string(shape.stages()) + ".";
  }
  const int rounds = std::max(1, shape.microBatches / shape.ranks);
  if (isInterleaved(shape.schedule) && shape.microBatches % rounds != 0) {
    return "--microbatches " + std::to_string(shape.microBatches) + " with --schedule " + name + " over --pp " +
           std::to_string(shape.ranks) + ": micro-batches go round the ranks in " + std::to_string(rounds) +
           " rounds, which must divide them (as PyTorch's schedule asks). Pass --microbatches " +
           std::to_string(rounds * shape.ranks) + ".";
  }
  return std::nullopt;
}

int rankOfStage(const PipelineShape& shape, int stage) {
  if (foldsIntoAV(shape.schedule) && stage >= shape.ranks) return 2 * shape.ranks - 1 - stage;
  return stage % shape.ranks;
}

std::vector<int> stagesOfRank(const PipelineShape& shape, int rank) {
  std::vector<int> out;
  for (int s = 0; s < shape.stages(); ++s) {
    if (rankOfStage(shape, s) == rank) out.push_back(s);
  }
  return out;
}

std::vector<PipeAction> computeActions(const PipelineShape& shape, int rank) {
  switch (shape.schedule) {
    case PipelineSchedule::GPipe:
      return gpipeActions(shape, rank);
    case PipelineSchedule::OneFOneB:
      return oneFOneBActions(shape, rank);
    case PipelineSchedule::Interleaved1F1B:
      return loopedActions(shape, rank, 2, false);
    case PipelineSchedule::ZeroBubble:
      return loopedActions(shape, rank, 1, true);
    case PipelineSchedule::Zbv:
      return zbvActions(shape, rank);
    case PipelineSchedule::DualPipeV:
      return dualPipeVActions(shape, rank);
  }
  return {};
}

std::string actionText(const PipeAction& action) {
  return std::to_string(action.stage) + kindText(action.kind) + std::to_string(action.microBatch);
}

bool carriesGradient(const PipeAction& a) { return a.kind == Kind::SendGradient || a.kind == Kind::RecvGradient; }

int sendingStage(const PipeAction& a) {
  if (a.kind == Kind::RecvGradient) return a.stage + 1;
  if (a.kind == Kind::RecvActivation) return a.stage - 1;
  return a.stage;
}

std::string transferLabel(const PipeAction& a) {
  const int from = sendingStage(a), to = carriesGradient(a) ? from - 1 : from + 1;
  return std::string(carriesGradient(a) ? "B" : "F") + " mb" + std::to_string(a.microBatch) + " stage" +
         std::to_string(from) + "->" + std::to_string(to);
}

void HeldActivations::run(const PipeAction& a) {
  if (a.kind == Kind::Forward) held_.insert({a.stage, a.microBatch});
  if (a.kind == Kind::Backward || a.kind == Kind::BackwardWeight) held_.erase({a.stage, a.microBatch});
}

int HeldActivations::microBatches() const {
  std::set<int> batches;
  for (const auto& [stage, batch] : held_) batches.insert(batch);
  return static_cast<int>(batches.size());
}

std::optional<PipeAction> parseActionText(const std::string& text) {
  // digits, a kind, digits: the kinds hold no digit, so the first and last runs of digits are the numbers
  const size_t kindBegin = text.find_first_not_of("0123456789");
  const size_t kindEnd = text.find_last_not_of("0123456789");
  if (kindBegin == 0 || kindBegin == std::string::npos || kindEnd + 1 >= text.size()) return std::nullopt;
  const std::string kind = text.substr(kindBegin, kindEnd + 1 - kindBegin);
  for (int k = 0; k <= static_cast<int>(Kind::RecvGradient); ++k) {
    if (kind != kindText(static_cast<Kind>(k))) continue;
    if (kindBegin > 6 || text.size() - kindEnd - 1 > 6) return std::nullopt;  // past any real stage or micro-batch
    return PipeAction{static_cast<Kind>(k), std::stoi(text.substr(0, kindBegin)), std::stoi(text.substr(kindEnd + 1))};
  }
  return std::nullopt;
}

namespace {

// When each action of the plan ends, by what it makes: a stage's output (F), its input's gradient
// (B or I), its weights' gradient (W).
using Made = std::tuple<int, int, int>;  // (0 output | 1 input gradient | 2 weights, stage, micro-batch)

Made madeBy(const PipeAction& a) {
  const int what = a.kind == Kind::Forward ? 0 : a.kind == Kind::BackwardWeight ? 2 : 1;
  return {what, a.stage, a.microBatch};
}

// What `a` waits for, besides its rank being free.
std::vector<Made> needsOf(const PipeAction& a, int lastStage) {
  switch (a.kind) {
    case Kind::Forward:
      if (a.stage == 0) return {};
      return {{0, a.stage - 1, a.microBatch}};
    case Kind::Backward:
    case Kind::BackwardInput:
      if (a.stage == lastStage) return {{0, a.stage, a.microBatch}};
      return {{0, a.stage, a.microBatch}, {1, a.stage + 1, a.microBatch}};
    case Kind::BackwardWeight:
      return {{1, a.stage, a.microBatch}};
    default:
      return {};
  }
}

double durationOf(const PipeAction& a, const ActionDurations& d) {
  switch (a.kind) {
    case Kind::Forward:
      return d.forward;
    case Kind::Backward:
      return d.backward;
    case Kind::BackwardInput:
      return d.backwardInput;
    case Kind::BackwardWeight:
      return d.backwardWeight;
    default:
      return 0;
  }
}

}  // namespace

std::optional<std::vector<std::vector<PlannedAction>>> plannedTimeline(const PipelineShape& shape,
                                                                       const ActionDurations& durations,
                                                                       std::string* stuck) {
  std::vector<std::vector<PipeAction>> lists;
  for (int r = 0; r < shape.ranks; ++r) lists.push_back(computeActions(shape, r));
  std::vector<std::vector<PlannedAction>> plan(shape.ranks);
  std::map<Made, double> ends;
  // Each pass runs every action whose needs have ended; an action's times depend only on those
  // ends and on its rank's previous action, so the order of the passes changes nothing.
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < shape.ranks; ++r) {
      while (plan[r].size() < lists[r].size()) {
        const PipeAction& a = lists[r][plan[r].size()];
        double start = plan[r].empty() ? 0 : plan[r].back().end;
        bool ready = true;
        for (const Made& need : needsOf(a, shape.stages() - 1)) {
          auto it = ends.find(need);
          if (it == ends.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) break;
        plan[r].push_back({a, start, start + durationOf(a, durations)});
        ends[madeBy(a)] = plan[r].back().end;
        moved = true;
      }
    }
  }
  for (int r = 0; r < shape.ranks; ++r) {
    if (plan[r].size() == lists[r].size()) continue;
    if (stuck) *stuck = "rank " + std::to_string(r) + " waits forever at " + actionText(lists[r][plan[r].size()]);
    return std::nullopt;
  }
  return plan;
}

BubbleForm bubbleClosedForm(const PipelineShape& shape) {
  const double p = shape.ranks, v = shape.stagesPerRank, m = shape.microBatches;
  switch (shape.schedule) {
    case PipelineSchedule::GPipe:
    case PipelineSchedule::OneFOneB:
      return {(p - 1) / m, "(P-1)/M"};
    case PipelineSchedule::Interleaved1F1B:
      return {(p - 1) / (v * m), "(P-1)/(V*M)"};
    case PipelineSchedule::ZeroBubble:
      return {(p - 1) / (3 * v * m), "(P-1)/(3*V*M), ZB-H1's at F=I=W"};
    case PipelineSchedule::Zbv:
      return {0, "0, ZB-V's at F=I=W"};
    case PipelineSchedule::DualPipeV:
      // DualPipe's (PP/2-1)(F&B+B-3W) with PP = 2P stages, over the ideal 2M(F+B): with F = I = W and
      // a pair taking F+B (nothing overlaps on one stream), 2(P-1) over 6M.
      return {(p - 1) / (3 * m), "(P-1)/(3*M), DualPipeV's (P-1)(F&B+B-3W) at F=I=W, F&B=F+B"};
  }
  return {};
}

std::vector<StageBlocks> stageBlocks(int blocks, int stages) {
  std::vector<StageBlocks> out;
  for (int k = 0; k < stages; ++k) {
    const int first = k * blocks / stages;
    out.push_back({first, (k + 1) * blocks / stages - first});
  }
  return out;
}

}  // namespace shardscope::config
