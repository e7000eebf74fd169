// A pipeline's schedule as one list of actions per rank, in the vocabulary of
// torch.distributed.pipelining's schedule IR (its _Action: stage, computation type, micro-batch):
// forward, full backward, backward for inputs and for weights, and the sends and receives of
// activations and of their gradients between stages on different ranks (where those go in each
// list: config/pipeline_transfers.h). The engine runs a rank's list in order; the views lay the
// same lists out as planned (plannedTimeline) beside what a run measured; --print-schedule prints
// them before anything runs.
//
// The orders are those of PyTorch 2.11's schedule classes, built here from their rules (tested
// against the classes themselves by tests/pytorch_pipeline_orders.py):
//   gpipe             every forward, then every backward, micro-batches in order (ScheduleGPipe)
//   1f1b              P - r - 1 forwards on rank r, then one forward and one backward in turn, then
//                     the backwards left (Schedule1F1B)
//   interleaved_1f1b  V stages per rank, rank r holding stages r, r + P, ...; micro-batches go
//                     round the ranks in rounds of P (ScheduleInterleaved1F1B, Narayanan et al. 2021)
//   zero_bubble       interleaved, with each backward split into I (the input's gradient, which the
//                     stage before waits for) and W (the weights', which waits for nothing) and the
//                     W moved into what would be bubble (ScheduleInterleavedZeroBubble, Qi et al. 2023)
//   zbv               two stages per rank in a V: rank r holds stages r and 2P - 1 - r, so the first
//                     and last stage share rank 0 (ScheduleZBVZeroBubble)
//   dualpipev         zbv's V, with one chunk's forward paired with the other chunk's backward
//                     (OVERLAP_F_B, run one after the other, as PyTorch's runtime runs them) and
//                     whole backwards beside split ones (ScheduleDualPipeV, DeepSeek's DualPipe
//                     cut in half)
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/modes.h"

namespace shardscope::config {

enum class PipeActionKind : uint8_t {
  Forward,         // F: the stage's forward of one micro-batch (the last stage's includes the loss)
  Backward,        // B: its whole backward: the input's gradient and the weights'
  BackwardInput,   // I: the input's gradient alone (zero bubble)
  BackwardWeight,  // W: the weights' gradient, after its I (zero bubble)
  SendActivation,  // SEND_F: the stage's output to the next stage's rank
  RecvActivation,  // RECV_F: the stage's input from the previous stage's rank
  SendGradient,    // SEND_B: the gradient of the stage's input to the previous stage's rank
  RecvGradient,    // RECV_B: the gradient of the stage's output from the next stage's rank
};

inline bool isComputeAction(PipeActionKind kind) { return kind <= PipeActionKind::BackwardWeight; }

// Whether the schedule places several stages on each rank (interleaved_1f1b, zero_bubble, zbv,
// dualpipev).
inline bool loopsOverStages(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::Interleaved1F1B || schedule == PipelineSchedule::ZeroBubble ||
         schedule == PipelineSchedule::Zbv || schedule == PipelineSchedule::DualPipeV;
}
// Whether it folds its stages into a V, two per rank: rank r holds stages r and 2P - 1 - r.
inline bool foldsIntoAV(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::Zbv || schedule == PipelineSchedule::DualPipeV;
}

// Whether some of its backwards are split into I and W (zero_bubble, zbv, dualpipev).
inline bool splitsBackward(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::ZeroBubble || schedule == PipelineSchedule::Zbv ||
         schedule == PipelineSchedule::DualPipeV;
}

struct PipeAction {
  PipeActionKind kind = PipeActionKind::Forward;
  int stage = 0;       // the pipeline stage, 0 .. stages - 1
  int microBatch = 0;  // 0 .. microBatches - 1
  // dualpipev: this forward and the backward after it are one of PyTorch's OVERLAP_F_B actions (one
  // moment of its lowering, config/pipeline_transfers.h). Not part of what the action is (==).
  bool pairedWithNext = false;
  bool operator==(const PipeAction& other) const {
    return kind == other.kind && stage == other.stage && microBatch == other.microBatch;
  }
};

struct PipelineShape {
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int ranks = 1;          // P: ranks in a pipeline group
  int stagesPerRank = 1;  // V
  int microBatches = 1;   // M
  int stages() const { return ranks * stagesPerRank; }
};

// Why the shape cannot be scheduled (V with a one-stage-per-rank schedule, zbv without V = 2, an M
// the interleaved rounds do not divide), naming the value and the fix; nothing when it can.
std::optional<std::string> pipelineShapeProblem(const PipelineShape& shape);

// The rank of the pipeline group that holds `stage`: stage % P (looped), or the V's fold (zbv).
int rankOfStage(const PipelineShape& shape, int stage);
// The stages `rank` holds, ascending.
std::vector<int> stagesOfRank(const PipelineShape& shape, int rank);

// The compute actions of `rank` (F, B, I, W), in the order it runs them.
std::vector<PipeAction> computeActions(const PipelineShape& shape, int rank);

// "1F3" (stage 1, forward, micro-batch 3), "0SEND_F2", as torch.distributed.pipelining prints them.
std::string actionText(const PipeAction& action);
// Of a transfer (a send or a receive): whether it carries a gradient (else an activation), the
// stage it leaves (an activation goes from stage s to s + 1, a gradient from s to s - 1), and its
// label, "F mb3 stage1->2": what crosses, for which micro-batch, from which stage to which.
bool carriesGradient(const PipeAction& transfer);
int sendingStage(const PipeAction& transfer);
std::string transferLabel(const PipeAction& transfer);

// actionText's inverse: nothing for text that names no action ("forward blocks.1").
std::optional<PipeAction> parseActionText(const std::string& text);

// The activations a rank holds as it runs its compute actions in order: a forward keeps its
// stage's share of its micro-batch until that micro-batch's backward on that stage (or, after an
// I, its W) frees it. The estimator walks a schedule's list with it, the schedule view a run's.
class HeldActivations {
 public:
  void run(const PipeAction& computeAction);
  const std::set<std::pair<int, int>>& stageMicroBatches() const { return held_; }  // (stage, micro-batch)
  int microBatches() const;                                                         // with any stage's held

 private:
  std::set<std::pair<int, int>> held_;
};

// How long each kind of compute action takes, for a planned timeline (any unit).
struct ActionDurations {
  double forward = 1;
  double backward = 2;
  double backwardInput = 1;
  double backwardWeight = 1;
};
struct PlannedAction {
  PipeAction action;
  double start = 0;
  double end = 0;
};
// The compute actions laid out as the schedule plans them: each as soon as its rank is free and
// what it needs is done (the forward of the stage before, the backward of the stage after, its
// own forward or I), transfers taking no time. Nothing when the lists cannot all run (a rank
// would wait forever); then `stuck`, when given, says on which action.
std::optional<std::vector<std::vector<PlannedAction>>> plannedTimeline(const PipelineShape& shape,
                                                                       const ActionDurations& durations,
                                                                       std::string* stuck = nullptr);

// The bubble's share of the ideal time, by the schedule's closed form (a prediction), and the
// form's text: (P-1)/M for gpipe and 1f1b, (P-1)/(V*M) for interleaved_1f1b, a third of that with
// F = I = W for zero_bubble (ZB-H1's (P-1)(F+I-W)), 0 for zbv at F = I = W (ZB-V), and
// (P-1)/(3M) for dualpipev (DualPipe's (PP/2-1)(F&B+B-3W) with 2P stages, at F = I = W, F&B = F+B).
struct BubbleForm {
  double fraction = 0;
  std::string form;
};
BubbleForm bubbleClosedForm(const PipelineShape& shape);

// The blocks of each stage, as evenly as they go (stage k: blocks [k*L/S, (k+1)*L/S)); the first
// stage holds the embedding besides and the last the head and the loss. Needs L >= S.
struct StageBlocks {
  int first = 0;  // its first block
  int count = 0;  // how many
};
std::vector<StageBlocks> stageBlocks(int blocks, int stages);

}  // namespace shardscope::config
