#include "trace/run_recording.h"

#include <algorithm>

namespace shardscope::trace {

RunRecording::RunRecording(int ranks) { reset(ranks); }

void RunRecording::reset(int ranks) {
  ranks_.assign(static_cast<size_t>(std::max(ranks, 0)), RankTimeline{});
  origin_ = INT64_MAX;
}

void RunRecording::add(const Event& e) {
  if (e.rank < 0 || e.rank >= ranks()) return;
  RankTimeline& r = ranks_[static_cast<size_t>(e.rank)];
  if (e.beginNs > 0) origin_ = std::min(origin_, e.beginNs);
  switch (e.kind) {
    case EventKind::Memory: {
      if (e.fromRole != kNoRole && e.fromRole < kMemoryRoleCount) {
        r.current[e.fromRole] -= e.bytes;
        r.current[e.role] += e.bytes;
      } else {
        r.current[e.role] += e.bytes;
      }
      MemorySample s;
      s.tNs = e.beginNs;
      for (int i = 0; i < kMemoryRoleCount; ++i) {
        if (r.current[i] < 0) {
          r.negativeBalance += -r.current[i];
          r.current[i] = 0;
        }
        s.bytes[i] = r.current[i];
        if (i < kTensorRoleCount) s.total += r.current[i];
        s.device += r.current[i];
        r.peakByRole[i] = std::max(r.peakByRole[i], r.current[i]);
      }
      r.peakDevice = std::max(r.peakDevice, s.device);
      if (s.total > r.peakTotal) {
        r.peakTotal = s.total;
        r.atPeakTotal = s.bytes;
      }
      r.memory.push_back(s);
      break;
    }
    case EventKind::Collective:
      r.collectives.push_back(e);
      r.longestCollective = std::max(r.longestCollective, e.endNs - e.beginNs);
      break;
    case EventKind::Compute:
      r.compute.push_back(e);
      r.longestCompute = std::max(r.longestCompute, e.endNs - e.beginNs);
      break;
    case EventKind::StepEnd: r.steps.push_back(e); break;
    case EventKind::Dropped:
    case EventKind::RunDone: r.dropped += e.count; break;
    default: break;
  }
}

std::array<CollectiveTotals, kCollectiveOpCount> RunRecording::collectiveTotals(int rank,
                                                                               int steps) const {
  std::array<CollectiveTotals, kCollectiveOpCount> out{};
  for (const auto& c : this->rank(rank).collectives) {
    if (steps >= 0 && (c.step < 0 || c.step >= steps)) continue;
    auto& t = out[c.op];
    ++t.count;
    t.bytes += collectiveSizeBytes(c);
    t.seconds += (c.endNs - c.beginNs) / 1e9;
  }
  return out;
}

namespace {
using Interval = std::pair<int64_t, int64_t>;

std::vector<Interval> unionOf(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t total = 0;
  for (const auto& i : v) total += i.second - i.first;
  return total;
}
}  // namespace

double RunRecording::overlapPercent(int rank) const {
  std::vector<Interval> comm, compute;
  for (const auto& c : this->rank(rank).collectives) comm.emplace_back(c.beginNs, c.endNs);
  for (const auto& c : this->rank(rank).compute) {
    const auto kind = static_cast<ComputeKind>(c.op);
    if (kind == ComputeKind::Forward || kind == ComputeKind::Backward) {
      compute.emplace_back(c.beginNs, c.endNs);
    }
  }
  const auto commU = unionOf(comm);
  const auto computeU = unionOf(compute);
  const int64_t commTime = length(commU);
  if (commTime == 0) return 0.0;
  int64_t both = 0;
  size_t j = 0;
  for (const auto& a : commU) {
    while (j < computeU.size() && computeU[j].second <= a.first) ++j;
    for (size_t k = j; k < computeU.size() && computeU[k].first < a.second; ++k) {
      both += std::min(a.second, computeU[k].second) - std::max(a.first, computeU[k].first);
    }
  }
  return 100.0 * static_cast<double>(both) / static_cast<double>(commTime);
}

std::vector<double> RunRecording::stepSeconds(int rank) const {
  std::vector<double> out;
  for (const auto& s : this->rank(rank).steps) out.push_back((s.endNs - s.beginNs) / 1e9);
  return out;
}

}  // namespace shardscope::trace
