#include "ui/recorded_transfer_arrows.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <tuple>

#include "config/pipeline_config.h"
#include "trace/spans.h"

namespace shardscope::ui {

namespace {

using config::PipeAction;
using config::PipeActionKind;
using Spans = std::vector<const trace::CollectiveSpan*>;

// A transfer as both its ends name it: (the replica both are, their place among a stage's ranks;
// a gradient; the stage that sent it; its micro-batch).
using TransferKey = std::tuple<int, bool, int, int>;
TransferKey keyOf(int replica, const PipeAction& a) {
  return {replica, config::carriesGradient(a), config::sendingStage(a), a.microBatch};
}

// A transfer's end on one rank: what it carried or took, with whom, the window of the action that
// made or needed it, and its recorded op.
struct End {
  PipeAction transfer;
  int rank = 0, peer = 0;
  int64_t actionBeginNs = 0, actionEndNs = 0;
  const trace::CollectiveSpan* op = nullptr;
};

// Whether `op` can be `end`'s: a send is issued once what it carries is being made (not before its
// action began), a receive before what needs it is done (not after its action ended).
bool causal(const End& end, const trace::CollectiveSpan& op, bool sending) {
  return sending ? op.issueNs >= end.actionBeginNs : op.issueNs <= end.actionEndNs;
}

struct RankEnds {
  int rank = 0;
  config::PipelinePlace place;
  std::map<TransferKey, End>* out = nullptr;
};

// What `rank`'s actions, in order, sent (`sending`) or received: a forward's activation to the
// next stage's rank and a backward's (or I's) input gradient to the stage before's; a forward's
// input from the stage before's rank and a backward's output gradient from the next stage's.
std::vector<End> endsOf(const Session& s, int rank, const std::vector<stats::MeasuredAction>& actions, bool sending) {
  const auto shape = config::pipelineShapeOf(s.config);
  const auto place = config::pipelinePlace(rank, s.config.world, s.config.pp);
  const auto rankOf = [&](int stage) { return config::rankOfStage(shape, stage) * place.stageRanks + place.stageRank; };
  std::vector<End> out;
  for (const auto& a : actions) {
    const int stage = a.action.stage, mb = a.action.microBatch;
    const bool forward = a.action.kind == PipeActionKind::Forward;
    const bool backward = a.action.kind == PipeActionKind::Backward || a.action.kind == PipeActionKind::BackwardInput;
    if (!forward && !backward) continue;
    const int toward = forward == sending ? stage + 1 : stage - 1;  // the stage at the other end
    if (toward < 0 || toward >= shape.stages() || rankOf(toward) == rank) continue;
    PipeActionKind kind = forward ? (sending ? PipeActionKind::SendActivation : PipeActionKind::RecvActivation)
                                  : (sending ? PipeActionKind::SendGradient : PipeActionKind::RecvGradient);
    out.push_back({{kind, stage, mb}, rank, rankOf(toward), a.beginNs, a.endNs, nullptr});
  }
  return out;
}

// The rank's sends (or receives) of `step`, in the order it issued them.
Spans opsOf(const trace::RankTimeline& t, int32_t step, trace::CollectiveOp op) {
  Spans out;
  for (const auto& c : t.collectives) {
    if (c.step == step && c.op == static_cast<uint8_t>(op)) out.push_back(&c);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->issueNs < b->issueNs; });
  return out;
}

// The transfer PyTorch's runtime named around the op (its unit "1RECV_F0, from rank 0"), or none.
std::optional<PipeAction> runtimeName(const trace::CollectiveSpan& c) {
  const std::string unit = trace::collectiveUnit(c);
  const auto action = config::parseActionText(unit.substr(0, unit.find(", ")));
  if (!action || config::isComputeAction(action->kind)) return std::nullopt;
  return action;
}

// Each op by the transfer the runtime named it: true where every one is named (later ones win: an
// evaluation's before the training's are named alike).
bool matchByName(const Spans& ops, const RankEnds& r) {
  std::vector<PipeAction> names;
  for (const auto* c : ops) {
    const auto name = runtimeName(*c);
    if (!name) return false;
    names.push_back(*name);
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    (*r.out)[keyOf(r.place.stageRank, names[k])] = {names[k], r.rank, 0, 0, 0, ops[k]};
  }
  return !ops.empty();
}

// Each of the rank's transfer ends given its op, by order, keyed; false where the counts differ,
// or a named peer or the times contradict the order (one more op after the schedule, a job's own,
// would shift every pairing by one). Ops issued before the step's first action (`firstNs`) beyond
// its ends' count are not its micro-batches' (an evaluation's forwards', shape inference's
// exchange, in the same step) and are passed over.
bool matchInOrder(std::vector<End>& ends, const Spans& ops, bool sending, int64_t firstNs, int pipeRanks,
                  const RankEnds& r) {
  if (ends.size() > ops.size()) return false;
  const size_t skipped = ops.size() - ends.size();
  for (size_t k = 0; k < skipped; ++k) {
    if (ops[k]->issueNs >= firstNs) return false;
  }
  for (size_t k = 0; k < ends.size(); ++k) {
    const int peer = ops[skipped + k]->peer;  // its place in the pipeline group, where named
    if (peer >= 0 && peer < pipeRanks && peer * r.place.stageRanks + r.place.stageRank != ends[k].peer) return false;
    if (!causal(ends[k], *ops[skipped + k], sending)) return false;
  }
  for (size_t k = 0; k < ends.size(); ++k) {
    ends[k].op = ops[skipped + k];
    (*r.out)[keyOf(r.place.stageRank, ends[k].transfer)] = ends[k];
  }
  return true;
}

}  // namespace

RecordedArrows recordedTransferArrows(const Session& s, const std::vector<std::vector<stats::MeasuredAction>>& step,
                                      const std::vector<int>& rowOfRank, int64_t stepBeginNs, int32_t stepNumber) {
  RecordedArrows out;
  std::map<TransferKey, End> sent, received;
  const int pipeRanks = config::pipelineShapeOf(s.config).ranks;
  for (size_t r = 0; r < step.size() && r < rowOfRank.size(); ++r) {
    const int rank = static_cast<int>(r);
    const auto& timeline = s.recording.rank(rank);
    const auto place = config::pipelinePlace(rank, s.config.world, s.config.pp);
    const int64_t firstNs = step[r].empty() ? INT64_MIN : step[r].front().beginNs;
    auto sends = endsOf(s, rank, step[r], true), recvs = endsOf(s, rank, step[r], false);
    const Spans sendOps = opsOf(timeline, stepNumber, trace::CollectiveOp::Send);
    const Spans recvOps = opsOf(timeline, stepNumber, trace::CollectiveOp::Recv);
    const RankEnds sender{rank, place, &sent}, receiver{rank, place, &received};
    if (!matchByName(sendOps, sender) && !matchInOrder(sends, sendOps, true, firstNs, pipeRanks, sender)) {
      out.unpaired += static_cast<int>(sends.size());
    }
    if (!matchByName(recvOps, receiver)) (void)matchInOrder(recvs, recvOps, false, firstNs, pipeRanks, receiver);
  }
  const auto seconds = [&](int64_t ns) { return static_cast<double>(ns - stepBeginNs) / 1e9; };
  for (const auto& [key, send] : sent) {
    const auto took = received.find(key);
    if (took == received.end() || static_cast<size_t>(took->second.rank) >= rowOfRank.size()) {
      ++out.unpaired;
      continue;
    }
    const int64_t issued = send.op->issueNs > 0 ? send.op->issueNs : send.op->beginNs;
    out.arrows.push_back({rowOfRank[static_cast<size_t>(send.rank)], rowOfRank[static_cast<size_t>(took->second.rank)],
                          seconds(issued), seconds(took->second.op->endNs), send.op->sizeUnknown ? 0 : send.op->bytes,
                          config::transferLabel(send.transfer), send.transfer});
  }
  return out;
}

}  // namespace shardscope::ui
