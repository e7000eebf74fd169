#include "ui/derived_refresh.h"

#include <algorithm>

namespace shardscope::ui {

double DerivedRefresh::intervalSeconds() const { return std::max(minIntervalSeconds_, kCostShare * costSeconds_); }

bool DerivedRefresh::due(uint64_t version, bool live, Clock::time_point now) const {
  if (derivedVersion_ == version) return false;
  if (!live || derivedVersion_ == UINT64_MAX) return true;
  return std::chrono::duration<double>(now - lastPass_).count() >= intervalSeconds();
}

void DerivedRefresh::derived(uint64_t version, Clock::time_point began, Clock::time_point ended) {
  derivedVersion_ = version;
  lastPass_ = ended;
  costSeconds_ = std::chrono::duration<double>(ended - began).count();
}

}  // namespace shardscope::ui
