// When to derive a live run's figures again. The comparison table's figures walk every event in
// detail (stats/run_stats.h): 26 ms a frame at 1.4 million events, 324 ms at 13.7 million. A live
// run changes the store every frame, so deriving them whenever it changed made the window crawl as
// a long run filled it. While any run records, they are derived again only once the last pass is
// old enough that the passes take a small share of the time (their cost times kCostShare, at least
// kMinInterval); with no run recording, as soon as the store changed, so a run that ends shows its
// final figures at once. The step-through's event groups (ui/playhead.h) follow the same rule, a
// quarter second apart at least, and at once while the run is held at a step gate.
#pragma once

#include <chrono>
#include <cstdint>

namespace shardscope::ui {

class DerivedRefresh {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kMinIntervalSeconds = 0.5;
  static constexpr double kCostShare = 20;  // passes take at most 1/20 of a live run's time
  explicit DerivedRefresh(double minIntervalSeconds = kMinIntervalSeconds) : minIntervalSeconds_(minIntervalSeconds) {}

  // Whether to derive the figures now for the store at `version`.
  bool due(uint64_t version, bool live, Clock::time_point now) const;
  // A pass for `version` just ended, having begun at `began`.
  void derived(uint64_t version, Clock::time_point began, Clock::time_point ended);
  // Whether the figures shown are older than the store (a live run's, between passes).
  bool stale(uint64_t version) const { return derivedVersion_ != UINT64_MAX && derivedVersion_ != version; }
  double intervalSeconds() const;  // between a live run's passes
  double minIntervalSeconds() const { return minIntervalSeconds_; }
  double lastCostSeconds() const { return costSeconds_; }
  Clock::time_point lastPass() const { return lastPass_; }

 private:
  double minIntervalSeconds_;
  uint64_t derivedVersion_ = UINT64_MAX;
  Clock::time_point lastPass_{};
  double costSeconds_ = 0;
};

}  // namespace shardscope::ui
