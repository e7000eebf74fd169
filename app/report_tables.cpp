#include "app/report_tables.h"

#include <algorithm>
#include <functional>

#include "trace/format.h"

namespace shardscope::app {

using trace::CollectiveOp;
using trace::MemoryRole;

using trace::formatBytes;

namespace {

std::string formatRate(double value, const char* unit) {
  char buf[32];
  if (value >= 1e9) std::snprintf(buf, sizeof buf, "%.2f G%s", value / 1e9, unit);
  else if (value >= 1e6) std::snprintf(buf, sizeof buf, "%.2f M%s", value / 1e6, unit);
  else if (value >= 1e3) std::snprintf(buf, sizeof buf, "%.2f k%s", value / 1e3, unit);
  else std::snprintf(buf, sizeof buf, "%.1f %s", value, unit);
  return buf;
}

std::string formatCollective(const trace::CollectiveTotals& c, int steps) {
  if (c.count == 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s/step %.1fms", formatBytes(static_cast<double>(c.bytes / std::max(steps, 1))).c_str(),
                c.seconds * 1e3 / std::max(steps, 1));
  return buf;
}

constexpr MemoryRole kRoles[] = {MemoryRole::ParamShard,     MemoryRole::ParamGathered,
                                 MemoryRole::GradShard,      MemoryRole::GradFull,
                                 MemoryRole::OptimizerState, MemoryRole::Activation,
                                 MemoryRole::CommBuffer,     MemoryRole::Other};
constexpr CollectiveOp kOps[] = {CollectiveOp::AllGather, CollectiveOp::ReduceScatter,
                                 CollectiveOp::AllReduce};

void printMemoryTable(std::FILE* out, const RunConfig& config, const std::vector<RankStats>& ranks) {
  // Say which allocator measured it: on GPU ranks the tensors live in the CUDA caching allocator.
  std::fprintf(out, "\nPeak memory per rank by role (measured by the %s%s)\n",
               config.device == "cuda" ? "CUDA caching allocator's trace hook" : "CPU allocator hook",
               config.recording == "alternate" ? ", even steps only" : "");
  std::fprintf(out, "%-5s %11s", "rank", "peak total");
  for (auto role : kRoles) std::fprintf(out, " %15s", trace::memoryRoleName(role));
  std::fprintf(out, "\n");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d %11s", r.rank, formatBytes(static_cast<double>(r.peakTotal)).c_str());
    for (auto role : kRoles) {
      std::fprintf(out, " %15s", formatBytes(static_cast<double>(r.peakByRole[static_cast<int>(role)])).c_str());
    }
    std::fprintf(out, "\n");
  }
}

}  // namespace

void printRunTables(std::FILE* out, const RunConfig& config, const std::vector<RankStats>& ranks) {
  const bool recorded = anyRecorded(ranks);
  if (recorded) {
    printMemoryTable(out, config, ranks);
  } else {
    std::fprintf(out, "\nMemory, collectives and overlap were not recorded (--recording %s): step "
                      "times and throughput only\n", config.recording.c_str());
  }
  std::fprintf(out, "\nTime, throughput and communication per rank (steps after the first)\n");
  std::fprintf(out, "%-5s %9s %12s %12s %12s %22s %22s %22s %8s\n", "rank", "step ms", "samples/s",
               "tokens/s", "model FLOP/s", "all_gather", "reduce_scatter", "all_reduce", "overlap");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d %9.1f %12s %12s %12s", r.rank, r.steadyStepSeconds * 1e3,
                 formatRate(r.samplesPerSecond, "").c_str(),
                 config.model == "gpt" ? formatRate(r.tokensPerSecond, "").c_str() : "-",
                 formatRate(r.modelFlopsPerSecond, "").c_str());
    for (auto op : kOps) {
      std::fprintf(out, " %22s", recorded ? formatCollective(r.collectives[static_cast<int>(op)], r.recordedSteps).c_str()
                                          : "not recorded");
    }
    if (recorded) std::fprintf(out, " %7.1f%%\n", r.overlapPercent);
    else std::fprintf(out, " %8s\n", "-");
  }
  int64_t dropped = 0;
  for (const auto& r : ranks) dropped += r.droppedEvents;
  if (dropped > 0) {
    std::fprintf(out, "warning: %lld events were dropped (recording buffers full); figures that "
                      "depend on them are incomplete\n", static_cast<long long>(dropped));
  }
}

void printComparisonTable(std::FILE* out, const std::vector<StrategyColumn>& columns) {
  auto maxOver = [](const std::vector<RankStats>& ranks, const std::function<double(const RankStats&)>& f) {
    double m = 0;
    for (const auto& r : ranks) m = std::max(m, f(r));
    return m;
  };
  std::fprintf(out, "\n%-28s", "");
  for (const auto& c : columns) std::fprintf(out, " %22s", c.strategy.c_str());
  std::fprintf(out, "\n");
  auto row = [&](const char* name, const std::function<std::string(const StrategyColumn&)>& cell) {
    std::fprintf(out, "%-28s", name);
    for (const auto& c : columns) std::fprintf(out, " %22s", c.ok ? cell(c).c_str() : "failed");
    std::fprintf(out, "\n");
  };
  // A column run with --recording off measured step times only.
  const auto recorded = [](const StrategyColumn& c, const std::function<std::string()>& cell) {
    return anyRecorded(c.ranks) ? cell() : std::string("not recorded");
  };
  row("peak memory (max rank)", [&](const StrategyColumn& c) {
    return recorded(c, [&] { return formatBytes(maxOver(c.ranks, [](const RankStats& r) { return double(r.peakTotal); })); });
  });
  for (auto role : kRoles) {
    const std::string name = std::string("  ") + trace::memoryRoleName(role);
    row(name.c_str(), [&](const StrategyColumn& c) {
      return recorded(c, [&] {
        return formatBytes(maxOver(c.ranks, [&](const RankStats& r) { return double(r.peakByRole[static_cast<int>(role)]); }));
      });
    });
  }
  row("step time (slowest rank)", [&](const StrategyColumn& c) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", 1e3 * maxOver(c.ranks, [](const RankStats& r) { return r.steadyStepSeconds; }));
    return std::string(buf);
  });
  row("samples/s (all ranks)", [&](const StrategyColumn& c) {
    double total = 0;
    for (const auto& r : c.ranks) total += r.samplesPerSecond;
    return formatRate(total, "");
  });
  for (auto op : kOps) {
    const std::string name = std::string(trace::collectiveOpName(op)) + " per step";
    row(name.c_str(), [&](const StrategyColumn& c) {
      if (c.ranks.empty()) return std::string("-");
      const auto& r = c.ranks.front();
      return recorded(c, [&] { return formatCollective(r.collectives[static_cast<int>(op)], r.recordedSteps); });
    });
  }
  bool anyRecompute = false;
  for (const auto& c : columns) anyRecompute |= maxOver(c.ranks, [](const RankStats& r) { return r.recomputeSecondsPerStep; }) > 0;
  if (anyRecompute) {  // activation checkpointing: what the memory it saves costs in compute
    row("recompute per step", [&](const StrategyColumn& c) {
      return recorded(c, [&] {
        return trace::formatDuration(1e9 * maxOver(c.ranks, [](const RankStats& r) { return r.recomputeSecondsPerStep; }));
      });
    });
  }
  row("comm/compute overlap", [&](const StrategyColumn& c) {
    return recorded(c, [&] {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%%", maxOver(c.ranks, [](const RankStats& r) { return r.overlapPercent; }));
      return std::string(buf);
    });
  });
  for (const auto& c : columns) {
    if (!c.ok) std::fprintf(out, "%s failed: %s\n", c.strategy.c_str(), c.error.c_str());
  }
}

}  // namespace shardscope::app
