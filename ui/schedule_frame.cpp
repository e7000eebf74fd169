// scheduleFrame: one step of a pipeline session, measured and planned, ready to draw (no ImGui).
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "config/pipeline_config.h"
#include "config/pipeline_transfers.h"
#include "trace/rank_placements.h"
#include "ui/recorded_transfer_arrows.h"
#include "ui/schedule_view.h"

namespace shardscope::ui {

namespace {

using config::PipeActionKind;
using Measured = std::vector<std::vector<stats::MeasuredAction>>;

// The last step every rank ran whole (all its schedule's compute actions: a PyTorch job's trace
// names its transfers as sends and receives, not as actions), or -1.
int32_t lastWholeStep(const Session& s, const Measured& ranks) {
  const auto shape = config::pipelineShapeOf(s.config);
  std::map<int32_t, int> whole;  // step -> ranks that ran it whole
  for (size_t r = 0; r < ranks.size(); ++r) {
    const auto place = config::pipelinePlace(static_cast<int>(r), s.config.world, s.config.pp);
    const size_t expected = config::computeActions(shape, place.pipeRank).size();
    std::map<int32_t, size_t> counts;
    for (const auto& a : ranks[r]) counts[a.step] += config::isComputeAction(a.action.kind) ? 1 : 0;
    for (const auto& [step, n] : counts) whole[step] += n == expected ? 1 : 0;
  }
  int32_t last = -1;
  for (const auto& [step, n] : whole) {
    if (n == static_cast<int>(ranks.size())) last = step;
  }
  return last;
}

// The step's actions on one rank.
std::vector<stats::MeasuredAction> ofStep(const std::vector<stats::MeasuredAction>& actions, int32_t step) {
  std::vector<stats::MeasuredAction> out;
  for (const auto& a : actions) {
    if (a.step == step) out.push_back(a);
  }
  return out;
}

// How many micro-batches' activations the rank holds after each of its compute actions.
std::vector<std::pair<double, int>> heldOverStep(const std::vector<ScheduleCell>& cells) {
  config::HeldActivations held;
  std::vector<std::pair<double, int>> out{{0.0, 0}};
  for (const ScheduleCell& c : cells) {
    held.run(c.action);
    out.emplace_back(c.end, held.microBatches());
  }
  return out;
}

std::string rowLabel(int rank, const config::PipelineShape& shape, int pipeRank) {
  std::string stages;
  for (int s : config::stagesOfRank(shape, pipeRank)) stages += (stages.empty() ? "" : ",") + std::to_string(s);
  return "rank " + std::to_string(rank) + " · stage" + (shape.stagesPerRank > 1 ? "s " : " ") + stages;
}

// The collective of kind `op` that `a` issued (each transfer action issues one), or none. Found by
// its issue inside `a`'s window: on a GPU it may begin running well after (its stream reaches it later).
const trace::CollectiveSpan* issuedWithin(const trace::RankTimeline& timeline, const stats::MeasuredAction& a,
                                          trace::CollectiveOp op) {
  constexpr size_t kLookAhead = 512;  // spans begun after its issue: ample for the transfers queued behind it
  const size_t first = trace::firstSpanFrom(timeline.collectives, static_cast<double>(a.beginNs));
  for (size_t i = first; i < timeline.collectives.size() && i < first + kLookAhead; ++i) {
    const auto& c = timeline.collectives[i];
    if (c.op == static_cast<uint8_t>(op) && c.issueNs >= a.beginNs && c.issueNs <= a.endNs) return &c;
  }
  return nullptr;
}

// The bytes of the send `a` issued; 0 where none was recorded.
int64_t sentBytes(const trace::RankTimeline& timeline, const stats::MeasuredAction& a) {
  const auto* send = issuedWithin(timeline, a, trace::CollectiveOp::Send);
  return send ? send->bytes : 0;
}

// When the receive `a` posted took its message: the end of its recorded receive (a receive is
// waited for by the action that needs it, later); `a`'s end where none was recorded.
int64_t receivedNs(const trace::RankTimeline& timeline, const stats::MeasuredAction& a) {
  const auto* recv = issuedWithin(timeline, a, trace::CollectiveOp::Recv);
  return recv ? recv->endNs : a.endNs;
}

// Each send of the step as an arrow to the receive that took it, on the rank at the same place of
// the receiving stage's block.
void addArrows(const Session& s, const std::vector<std::vector<stats::MeasuredAction>>& step,
               const std::vector<int>& rowOfRank, int64_t stepBegin, ScheduleFrame& frame) {
  const auto shape = config::pipelineShapeOf(s.config);
  const auto seconds = [&](int64_t ns) { return static_cast<double>(ns - stepBegin) / 1e9; };
  for (size_t r = 0; r < step.size(); ++r) {
    const auto place = config::pipelinePlace(static_cast<int>(r), s.config.world, s.config.pp);
    for (const auto& send : step[r]) {
      const bool activation = send.action.kind == PipeActionKind::SendActivation;
      if (!activation && send.action.kind != PipeActionKind::SendGradient) continue;
      const int toStage = send.action.stage + (activation ? 1 : -1);
      const int to = config::rankOfStage(shape, toStage) * place.stageRanks + place.stageRank;
      if (to < 0 || static_cast<size_t>(to) >= step.size()) continue;
      const config::PipeAction recv{activation ? PipeActionKind::RecvActivation : PipeActionKind::RecvGradient, toStage,
                                    send.action.microBatch};
      for (const auto& got : step[static_cast<size_t>(to)]) {
        if (!(got.action == recv)) continue;
        frame.arrows.push_back({rowOfRank[r], rowOfRank[static_cast<size_t>(to)], seconds(send.beginNs),
                                seconds(receivedNs(s.recording.rank(static_cast<int>(to)), got)),
                                sentBytes(s.recording.rank(static_cast<int>(r)), send),
                                config::transferLabel(send.action), send.action});
      }
    }
  }
}

// The plan's cells per pipeline rank, and each one's bubble, in seconds.
void addPlan(const config::PipelineShape& shape, ScheduleFrame& frame, const std::vector<int>& pipeRankOfRow) {
  const auto plan = config::plannedTimeline(shape, frame.durations);
  if (!plan) return;
  const auto bubbles = stats::plannedBubbles(*plan);
  frame.plannedSeconds = stats::plannedStep(*plan);
  for (size_t row = 0; row < frame.rows.size(); ++row) {
    const auto p = static_cast<size_t>(pipeRankOfRow[row]);
    if (p >= plan->size()) continue;
    for (const auto& a : (*plan)[p]) frame.rows[row].planned.push_back({a.action, a.start, a.end});
    if (p < bubbles.size()) frame.rows[row].plannedBubbleSeconds = bubbles[p].seconds;
  }
}

}  // namespace

int32_t scheduleStepAt(const Session& s, const std::vector<std::vector<stats::MeasuredAction>>& all,
                       double playheadNs) {
  const int32_t lastDone = lastWholeStep(s, all);
  if (lastDone < 0 || all.empty() || all.front().empty()) return lastDone;
  const auto& first = all.front();
  const auto tAbs = static_cast<int64_t>(playheadNs) + s.recording.originNs();
  if (tAbs < first.front().beginNs || tAbs >= first.back().endNs) return lastDone;
  int32_t at = first.front().step;
  for (const auto& a : first) {
    if (a.beginNs <= tAbs) at = a.step;
  }
  return std::min(at, lastDone);
}

ScheduleFrame scheduleFrame(const Session& s, double playheadNs) {
  if (s.config.pp < 2) return scheduleFrameOf(s, {}, -1);
  std::vector<std::vector<stats::MeasuredAction>> all;
  for (int r = 0; r < s.recording.ranks(); ++r) all.push_back(stats::measuredActions(s.recording.rank(r)));
  return scheduleFrameOf(s, all, scheduleStepAt(s, all, playheadNs));
}

static std::string sharedDeviceNote(const std::string& device) {
  const std::string shared = trace::ranksOnOneGpuIn(device);
  if (shared.empty()) return "";
  return "These ranks share one GPU (" + shared +
         "): while one computes, another's kernels may run on the same device, so a rank's measured "
         "bubble holds time the GPU spent on the other ranks. The plan and the closed form assume a "
         "device for each stage.";
}

ScheduleFrame scheduleFrameOf(const Session& s, const std::vector<std::vector<stats::MeasuredAction>>& all,
                              int32_t chosen) {
  ScheduleFrame frame;
  if (s.config.pp < 2) {
    frame.error =
        "No pipeline in this session: run with --pp 2 or more (Parallelism in the sidebar), or "
        "compare --schedules, to see a schedule against its run.";
    return frame;
  }
  const int ranks = static_cast<int>(all.size());
  frame.step = chosen;
  if (frame.step < 0) {
    frame.error = "No step of this pipeline has been recorded whole on every rank yet.";
    return frame;
  }
  Measured step;
  int64_t begin = INT64_MAX, end = INT64_MIN;
  for (const auto& actions : all) {
    step.push_back(ofStep(actions, frame.step));
    for (const auto& a : step.back()) begin = std::min(begin, a.beginNs), end = std::max(end, a.endNs);
  }
  frame.stepBeginNs = begin;
  frame.seconds = static_cast<double>(end - begin) / 1e9;
  const auto shape = config::pipelineShapeOf(s.config);
  // Rows in pipeline order: every rank of stage block 0, then of block 1, ...
  std::vector<int> order(static_cast<size_t>(ranks)), rowOfRank(static_cast<size_t>(ranks)), pipeRankOfRow;
  for (int r = 0; r < ranks; ++r) order[static_cast<size_t>(r)] = r;
  const auto pipeRankOf = [&](int r) { return config::pipelinePlace(r, s.config.world, s.config.pp).pipeRank; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pipeRankOf(a) < pipeRankOf(b); });
  for (int r : order) {
    ScheduleRow row;
    row.rank = r;
    row.label = rowLabel(r, shape, pipeRankOf(r));
    double busy = 0;
    for (const auto& a : step[static_cast<size_t>(r)]) {
      if (!config::isComputeAction(a.action.kind)) continue;
      // From where its compute began: an action that waited for its input computes after the wait.
      const double from = static_cast<double>(a.computeBeginNs - begin) / 1e9;
      row.measured.push_back({a.action, from, from + static_cast<double>(a.computeNs) / 1e9});
      busy += static_cast<double>(a.computeNs) / 1e9;
    }
    row.bubbleSeconds = std::max(0.0, frame.seconds - busy);
    row.held = heldOverStep(row.measured);
    rowOfRank[static_cast<size_t>(r)] = static_cast<int>(frame.rows.size());
    pipeRankOfRow.push_back(pipeRankOf(r));
    frame.rows.push_back(std::move(row));
  }
  frame.durations = stats::meanActionSeconds(all).value_or(config::ActionDurations{});
  addPlan(shape, frame, pipeRankOfRow);
  addArrows(s, step, rowOfRank, begin, frame);
  if (frame.arrows.empty()) {  // a PyTorch job's: its transfers are not actions, but its sends are recorded
    auto recorded = recordedTransferArrows(s, step, rowOfRank, begin, frame.step);
    frame.arrows = std::move(recorded.arrows);
    frame.arrowsFromSends = !frame.arrows.empty();
    frame.unpairedSends = recorded.unpaired;
  }
  const auto form = config::bubbleClosedForm(shape);
  frame.closedFormShare = form.fraction / (1 + form.fraction);
  frame.closedForm = form.form;
  frame.sharedDevice = sharedDeviceNote(s.device);
  return frame;
}

}  // namespace shardscope::ui
