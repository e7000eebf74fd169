#include "app/slow_step_notice.h"

#include "engine/launch/stall_watch.h"

namespace shardscope::app {

namespace {

constexpr size_t kRanksNamed = 4;  // more would not fit a line; the rest are counted

}  // namespace

SlowStepNotice::SlowStepNotice(int ranks, int steps, Clock::time_point start, std::chrono::seconds every)
    : lastTelling_(static_cast<size_t>(std::max(ranks, 0))), steps_(steps), stepBegan_(start), every_(every) {
  for (auto& e : lastTelling_) e.kind = trace::EventKind::Dropped;  // says nothing: "starting"
}

void SlowStepNotice::event(const trace::Event& event) {
  if (event.rank < 0 || static_cast<size_t>(event.rank) >= lastTelling_.size()) return;
  switch (event.kind) {  // the kinds describeProgress tells of
    case trace::EventKind::Group:
    case trace::EventKind::Collective:
    case trace::EventKind::StepEnd:
    case trace::EventKind::RunInfo:
      break;
    case trace::EventKind::Compute:
      if (static_cast<trace::ComputeKind>(event.op) == trace::ComputeKind::Step) return;
      break;
    default:
      return;
  }
  lastTelling_[static_cast<size_t>(event.rank)] = event;
}

void SlowStepNotice::stepEnded(int step, Clock::time_point now) {
  step_ = step + 1;
  stepBegan_ = now;
  told_ = 0;
}

std::string SlowStepNotice::poll(Clock::time_point now) {
  const auto running = std::chrono::duration_cast<std::chrono::seconds>(now - stepBegan_);
  if (step_ >= steps_ || running < every_ * (told_ + 1)) return "";
  ++told_;
  std::string line = "step " + std::to_string(step_ + 1) + "/" + std::to_string(steps_) + " has run " +
                     std::to_string(running.count()) + " s:";
  for (size_t r = 0; r < lastTelling_.size() && r < kRanksNamed; ++r) {
    const std::string doing = engine::describeProgress(lastTelling_[r]);
    line += (r == 0 ? " rank " : ", rank ") + std::to_string(r) + " " + (doing.empty() ? "starting" : doing);
  }
  if (lastTelling_.size() > kRanksNamed) {
    line += ", and " + std::to_string(lastTelling_.size() - kRanksNamed) + " more ranks";
  }
  return line;
}

}  // namespace shardscope::app
