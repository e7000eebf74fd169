#include "ui/recorded_transfer_arrows.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

#include "config/pipeline_config.h"

namespace shardscope::ui {

namespace {

using config::PipeAction;
using config::PipeActionKind;
using Spans = std::vector<const trace::CollectiveSpan*>;

// A transfer both its ends name alike: (a gradient, the stage that sent it, its micro-batch).
using TransferKey = std::tuple<bool, int, int>;
TransferKey keyOf(const PipeAction& a) { return {config::carriesGradient(a), config::sendingStage(a), a.microBatch}; }

// A transfer's end on one rank: what it carried or took, with whom, and its recorded op.
struct End {
  PipeAction transfer;
  int rank = 0, peer = 0;
  const trace::CollectiveSpan* op = nullptr;
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
    out.push_back({{kind, stage, mb}, rank, rankOf(toward), nullptr});
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

// Each of the rank's transfer ends given its op, by order, keyed; false where the counts differ
// or a named peer contradicts the order. Ops issued before the step's first action (`firstNs`)
// beyond its ends' count are not its micro-batches' (an evaluation's forwards', shape inference's
// exchange, in the same step) and are passed over.
bool matchInOrder(std::vector<End>& ends, const Spans& ops, const config::PipelinePlace& place, int64_t firstNs,
                  std::map<TransferKey, End>& out) {
  if (ends.size() > ops.size()) return false;
  const size_t skipped = ops.size() - ends.size();
  for (size_t k = 0; k < skipped; ++k) {
    if (ops[k]->issueNs >= firstNs) return false;
  }
  for (size_t k = 0; k < ends.size(); ++k) {
    const auto* op = ops[skipped + k];
    if (op->peer >= 0 && op->peer * place.stageRanks + place.stageRank != ends[k].peer) return false;
  }
  for (size_t k = 0; k < ends.size(); ++k) {
    ends[k].op = ops[skipped + k];
    out[keyOf(ends[k].transfer)] = ends[k];
  }
  return true;
}

}  // namespace

RecordedArrows recordedTransferArrows(const Session& s, const std::vector<std::vector<stats::MeasuredAction>>& step,
                                      const std::vector<int>& rowOfRank, int64_t stepBeginNs, int32_t stepNumber) {
  RecordedArrows out;
  std::map<TransferKey, End> sent, received;
  for (size_t r = 0; r < step.size() && r < rowOfRank.size(); ++r) {
    const int rank = static_cast<int>(r);
    const auto& timeline = s.recording.rank(rank);
    const auto place = config::pipelinePlace(rank, s.config.world, s.config.pp);
    auto sends = endsOf(s, rank, step[r], true), recvs = endsOf(s, rank, step[r], false);
    const int64_t firstNs = step[r].empty() ? INT64_MIN : step[r].front().beginNs;
    const Spans sendOps = opsOf(timeline, stepNumber, trace::CollectiveOp::Send);
    if (!matchInOrder(sends, sendOps, place, firstNs, sent)) out.unpaired += static_cast<int>(sends.size());
    (void)matchInOrder(recvs, opsOf(timeline, stepNumber, trace::CollectiveOp::Recv), place, firstNs, received);
  }
  const auto seconds = [&](int64_t ns) { return static_cast<double>(ns - stepBeginNs) / 1e9; };
  for (const auto& [key, send] : sent) {
    const auto took = received.find(key);
    if (took == received.end()) {
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
