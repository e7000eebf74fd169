#include "engine/launch/stall_watch.h"

#include <algorithm>
#include <cstdio>

namespace shardscope::engine {

StallWatch::StallWatch(int ranks, std::chrono::milliseconds limit, Clock::time_point start,
                       std::chrono::milliseconds startupLimit)
    : ranks_(static_cast<size_t>(ranks), Watched{start, "", false, false}),
      limit_(limit),
      startupLimit_(startupLimit) {}

void StallWatch::heard(int rank, Clock::time_point now) {
  ranks_.at(rank).lastHeard = now;
  ranks_.at(rank).heardOnce = true;
}

std::chrono::milliseconds StallWatch::limitOf(const Watched& rank) const {
  return rank.heardOnce ? limit_ : std::max(limit_, startupLimit_);
}

void StallWatch::sent(int rank, const trace::Event& event) {
  std::string what = describeProgress(event);
  if (!what.empty()) ranks_.at(rank).lastEvent = std::move(what);
}

void StallWatch::ended(int rank) { ranks_.at(rank).ended = true; }

int StallWatch::stalledRank(Clock::time_point now) const {
  if (limit_.count() <= 0) return -1;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!ranks_[r].ended && now - ranks_[r].lastHeard > limitOf(ranks_[r])) return static_cast<int>(r);
  }
  return -1;
}

std::string StallWatch::describeStall(int r, Clock::time_point now) const {
  const double silent = std::chrono::duration<double>(now - ranks_[r].lastHeard).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.0f s", silent);
  const std::string& last = ranks_[r].lastEvent;
  if (!ranks_[r].heardOnce) {
    return "rank " + std::to_string(r) + " sent nothing in the " + seconds +
           " since it was started (it never got as far as starting its recorder)";
  }
  return "rank " + std::to_string(r) + " sent nothing for " + seconds +
         "; its last event: " + (last.empty() ? "none yet (it was still building its model)" : last);
}

std::string describeProgress(const trace::Event& e) {
  const std::string inStep = e.step >= 0 ? " in step " + std::to_string(e.step + 1) : "";
  switch (e.kind) {
    case trace::EventKind::Group:
      return e.text + " began" + inStep;
    case trace::EventKind::Collective:
      return std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(e.op))) + " " +
             trace::collectiveUnit(e) + " ended" + inStep;
    case trace::EventKind::CollectiveIssued:
      return std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(e.op))) + " " +
             trace::collectiveUnit(e) + " issued" + inStep;
    case trace::EventKind::CollectiveFailed:
      return std::string(trace::collectiveOpName(static_cast<trace::CollectiveOp>(e.op))) + " " +
             trace::collectiveUnit(e) + " failed" + inStep;
    case trace::EventKind::Compute: {
      const auto kind = static_cast<trace::ComputeKind>(e.op);
      if (kind == trace::ComputeKind::Step) return "";  // its StepEnd says it better
      return std::string(trace::computeKindName(kind)) + (e.text.empty() ? "" : " " + e.text) + " ended" + inStep;
    }
    case trace::EventKind::StepEnd:
      return "step " + std::to_string(e.step + 1) + " ended";
    case trace::EventKind::RunInfo:
      return "it joined the run (model built, before step 1)";
    default:
      return "";
  }
}

}  // namespace shardscope::engine
