#include "config/pipeline_transfers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace shardscope::config {

namespace {

using Kind = PipeActionKind;
using Key = std::tuple<Kind, int, int>;  // (kind, stage, micro-batch)
// One moment of a rank's walk: a compute action (or dualpipev's pair of them, one OVERLAP_F_B), or
// none, one of PyTorch's actions that waits for nothing.
using Moment = std::vector<PipeAction>;

constexpr size_t kStagesGatheredAhead = 3;  // _add_unshard_reshard's max_active_stages

Key keyOf(const PipeAction& a) { return {a.kind, a.stage, a.microBatch}; }

// The first stages (at most kStagesGatheredAhead, each once) that the actions from `from` on run.
std::vector<int> nextStages(const std::vector<PipeAction>& actions, size_t from) {
  std::vector<int> out;
  for (size_t i = from; i < actions.size() && out.size() < kStagesGatheredAhead; ++i) {
    if (std::find(out.begin(), out.end(), actions[i].stage) == out.end()) out.push_back(actions[i].stage);
  }
  return out;
}

// A rank's compute actions as PyTorch's walk meets them: before each (a pair, one), a moment per
// stage it lets go (RESHARD) and per stage it gathers ahead (UNSHARD); after a stage's M-th
// backward (B or W), its REDUCE_GRAD. The RESHARDs after the last action come after every transfer
// and are left out.
std::vector<Moment> momentsOf(const std::vector<PipeAction>& compute, int microBatches) {
  std::vector<Moment> out;
  std::set<int> gathered;
  std::map<int, int> backwards;
  for (size_t i = 0; i < compute.size();) {
    const auto next = nextStages(compute, i);
    for (auto it = gathered.begin(); it != gathered.end();) {
      const bool needed = std::find(next.begin(), next.end(), *it) != next.end();
      if (needed) {
        ++it;
        continue;
      }
      out.emplace_back();
      it = gathered.erase(it);
    }
    for (int stage : next) {
      if (gathered.insert(stage).second) out.emplace_back();
    }
    const size_t end = std::min(compute.size(), compute[i].pairedWithNext ? i + 2 : i + 1);
    out.emplace_back(compute.begin() + static_cast<std::ptrdiff_t>(i),
                     compute.begin() + static_cast<std::ptrdiff_t>(end));
    for (; i < end; ++i) {
      const bool endsAGradient = compute[i].kind == Kind::Backward || compute[i].kind == Kind::BackwardWeight;
      if (endsAGradient && ++backwards[compute[i].stage] == microBatches) out.emplace_back();
    }
  }
  return out;
}

// The send a compute action's output needs and its receive on the other rank, where the stage that
// takes it is on another rank: a forward's activation to the next stage, an input's gradient (B or
// I) to the stage before.
std::optional<std::pair<PipeAction, PipeAction>> transferOf(const PipelineShape& shape, const PipeAction& a) {
  const bool forward = a.kind == Kind::Forward;
  const bool inputGradient = a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
  if (!forward && !inputGradient) return std::nullopt;
  const int to = forward ? a.stage + 1 : a.stage - 1;
  if (to < 0 || to >= shape.stages() || rankOfStage(shape, to) == rankOfStage(shape, a.stage)) return std::nullopt;
  if (forward)
    return std::pair{PipeAction{Kind::SendActivation, a.stage, a.microBatch},
                     PipeAction{Kind::RecvActivation, to, a.microBatch}};
  return std::pair{PipeAction{Kind::SendGradient, a.stage, a.microBatch},
                   PipeAction{Kind::RecvGradient, to, a.microBatch}};
}

// Whether what `a` needs is in the rank's list already: its input's receive (or the forward of the
// stage before, on this rank), its output gradient's receive (or the stage after's B or I).
bool ready(const PipelineShape& shape, const PipeAction& a, const std::set<Key>& placed) {
  const int s = a.stage, m = a.microBatch;
  if (a.kind == Kind::Forward && s != 0) {
    return placed.count({Kind::RecvActivation, s, m}) > 0 || placed.count({Kind::Forward, s - 1, m}) > 0;
  }
  const bool inputGradient = a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
  if (inputGradient && s != shape.stages() - 1) {
    return placed.count({Kind::RecvGradient, s, m}) > 0 || placed.count({Kind::BackwardInput, s + 1, m}) > 0 ||
           placed.count({Kind::Backward, s + 1, m}) > 0;
  }
  return true;
}

// Every rank's list of a multi-stage schedule, its transfers placed by PyTorch's walk.
std::vector<std::vector<PipeAction>> lockstepActions(const PipelineShape& shape) {
  const auto ranks = static_cast<size_t>(shape.ranks);
  std::vector<std::vector<Moment>> moments;
  for (int r = 0; r < shape.ranks; ++r) moments.push_back(momentsOf(computeActions(shape, r), shape.microBatches));
  std::vector<std::vector<PipeAction>> out(ranks);
  std::vector<std::set<Key>> placed(ranks);
  const auto place = [&](int rank, const PipeAction& a) {
    out[static_cast<size_t>(rank)].push_back(a);
    placed[static_cast<size_t>(rank)].insert(keyOf(a));
  };
  std::vector<size_t> at(ranks, 0);
  const auto left = [&] {
    for (size_t r = 0; r < ranks; ++r) {
      if (at[r] < moments[r].size()) return true;
    }
    return false;
  };
  while (left()) {
    bool moved = false;
    for (int r = 0; r < shape.ranks; ++r) {  // in rank order, as PyTorch's walk
      const auto i = static_cast<size_t>(r);
      if (at[i] == moments[i].size()) continue;
      const Moment& moment = moments[i][at[i]];
      const bool waits =
          std::any_of(moment.begin(), moment.end(), [&](const PipeAction& a) { return !ready(shape, a, placed[i]); });
      if (waits) continue;
      for (const PipeAction& a : moment) place(r, a);
      for (const PipeAction& a : moment) {
        if (const auto transfer = transferOf(shape, a)) {
          place(r, transfer->first);
          place(rankOfStage(shape, transfer->second.stage), transfer->second);
        }
      }
      ++at[i];
      moved = true;
    }
    if (!moved) throw std::logic_error("pipeline schedule: no rank's next action can run (a malformed schedule)");
  }
  return out;
}

}  // namespace

std::vector<std::vector<PipeAction>> everyRanksActions(const PipelineShape& shape) {
  if (loopsOverStages(shape.schedule)) return lockstepActions(shape);  // one walk for every rank
  std::vector<std::vector<PipeAction>> out;
  for (int r = 0; r < shape.ranks; ++r) out.push_back(rankActions(shape, r));
  return out;
}

std::vector<PipeAction> rankActions(const PipelineShape& shape, int rank) {
  if (loopsOverStages(shape.schedule)) return lockstepActions(shape)[static_cast<size_t>(rank)];
  const int last = shape.stages() - 1;
  auto elsewhere = [&](int stage) { return stage >= 0 && stage <= last && rankOfStage(shape, stage) != rank; };
  std::vector<PipeAction> out;
  for (const PipeAction& a : computeActions(shape, rank)) {
    const bool forward = a.kind == Kind::Forward;
    const bool inputGradient = a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
    if (forward && elsewhere(a.stage - 1)) out.push_back({Kind::RecvActivation, a.stage, a.microBatch});
    if (inputGradient && elsewhere(a.stage + 1)) out.push_back({Kind::RecvGradient, a.stage, a.microBatch});
    out.push_back(a);
    if (forward && elsewhere(a.stage + 1)) out.push_back({Kind::SendActivation, a.stage, a.microBatch});
    if (inputGradient && elsewhere(a.stage - 1)) out.push_back({Kind::SendGradient, a.stage, a.microBatch});
  }
  return out;
}

std::string scheduleText(const PipelineShape& shape) {
  std::ostringstream out;
  const auto lists = everyRanksActions(shape);
  for (size_t r = 0; r < lists.size(); ++r) {
    out << "rank " << r << ":";
    for (const PipeAction& a : lists[r]) out << ' ' << actionText(a);
    out << '\n';
  }
  return out.str();
}

}  // namespace shardscope::config
