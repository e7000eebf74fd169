#include "stats/report_tables.h"

#include <algorithm>
#include <functional>

#include "config/pipeline_config.h"
#include "config/strategies.h"
#include "stats/comparison_figures.h"
#include "trace/format.h"
#include "trace/ring_schedule.h"

namespace shardscope::stats {

using trace::CollectiveOp;
using trace::MemoryRole;

using trace::formatBytes;
using trace::formatMilliseconds;
using trace::formatPercent;
using trace::formatRatio;

namespace {

// A collective type's time per step, "-" where the rank ran none.
std::string formatCollectiveTime(const trace::CollectiveTotals& c, int steps) {
  if (c.count == 0) return "-";
  return trace::formatDuration(c.seconds * 1e9 / std::max(steps, 1));
}

// "size / sent" of one collective type per step: what the algorithm asks for against what the rank
// puts on the wire for it under the ring schedule.
std::string formatTraffic(const trace::CollectiveTotals& c, int steps) {
  if (c.count == 0) return "-";
  return trace::formatCollectiveBytes(c, c.sizeBytes, steps) + " / " +
         trace::formatCollectiveBytes(c, c.sentBytes, steps);
}

constexpr const char* kTrafficLegend =
    "size: the collectives' sizes as nccl-tests counts them (the all-reduce buffer, the all-gather\n"
    "output, the reduce-scatter input); sent, received: what the rank moves under the ring schedule\n"
    "(all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size each way; a PyTorch\n"
    "job's all-to-all its input and output less its own part, its send and recv their message one way)";

constexpr MemoryRole kRoles[] = {MemoryRole::ParamShard, MemoryRole::ParamGathered,  MemoryRole::GradShard,
                                 MemoryRole::GradFull,   MemoryRole::OptimizerState, MemoryRole::Activation,
                                 MemoryRole::CommBuffer, MemoryRole::Other};
std::vector<CollectiveOp> opsShown(const std::vector<RankStats>& ranks) {
  std::vector<const RankStats*> all;
  for (const auto& r : ranks) all.push_back(&r);
  return collectiveOpsShown(all);
}

// What is left of `capacity` at the rank's peak on the device; negative: it would not fit.
std::string formatHeadroom(double capacity, const RankStats& r) {
  const double left = capacity - static_cast<double>(r.peakDevice);
  return left >= 0 ? formatBytes(left) : "-" + formatBytes(-left) + " (over)";
}

void printTrafficTable(std::FILE* out, const std::vector<RankStats>& ranks) {
  std::fprintf(out, "\nTraffic per rank per step, size / sent\n%s\n", kTrafficLegend);
  const auto ops = opsShown(ranks);
  std::fprintf(out, "%-5s", "rank");
  for (auto op : ops) std::fprintf(out, " %22s", trace::collectiveOpName(op));
  std::fprintf(out, " %12s %12s %12s\n", "total size", "total sent", "received");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d", r.rank);
    for (auto op : ops)
      std::fprintf(out, " %22s", formatTraffic(r.collectives[static_cast<int>(op)], r.recordedSteps).c_str());
    const auto all = trace::allCollectives(r.collectives);
    const double steps = r.recordedSteps;
    std::fprintf(out, " %12s %12s %12s\n", trace::formatCollectiveBytes(all, all.sizeBytes, steps).c_str(),
                 trace::formatCollectiveBytes(all, all.sentBytes, steps).c_str(),
                 trace::formatCollectiveBytes(all, all.receivedBytes, steps).c_str());
  }
}

// --offload cpu: what each rank held in host memory (the CPU allocator hook and the pinned blocks
// it wraps), beside the device's table; nothing for any other run.
void printHostMemoryTable(std::FILE* out, const std::vector<RankStats>& ranks) {
  if (std::none_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return r.peakHost > 0; })) return;
  std::fprintf(out,
               "\nPeak host memory per rank (--offload cpu: pinned shards and gradients, the optimizer's state)\n");
  std::fprintf(out, "%-5s %11s", "rank", "peak total");
  for (auto role : trace::kOffloadedRoles) std::fprintf(out, " %15s", trace::memoryRoleName(role));
  std::fprintf(out, "\n");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d %11s", r.rank, formatBytes(static_cast<double>(r.peakHost)).c_str());
    for (auto role : trace::kOffloadedRoles) {
      std::fprintf(out, " %15s", formatBytes(static_cast<double>(r.peakHostByRole[static_cast<int>(role)])).c_str());
    }
    std::fprintf(out, "\n");
  }
}

void printMemoryTable(std::FILE* out, const config::RunConfig& config, const std::vector<RankStats>& ranks,
                      const DeviceLimits& limits) {
  // Say which allocator measured it: on GPU ranks the tensors live in the CUDA caching allocator.
  std::fprintf(out, "\nPeak memory per rank by role (measured by the %s%s)\n",
               config.device == config::DeviceKind::Cuda ? "CUDA caching allocator's trace hook" : "CPU allocator hook",
               config.recording == config::RecordingMode::Alternate ? ", even steps only" : "");
  const double capacity = limits.capacityBytes;
  std::fprintf(out, "%-5s %11s", "rank", "peak total");
  for (auto role : kRoles) std::fprintf(out, " %15s", trace::memoryRoleName(role));
  if (capacity > 0) std::fprintf(out, " %18s", "headroom");
  std::fprintf(out, "\n");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d %11s", r.rank, formatBytes(static_cast<double>(r.peakTotal)).c_str());
    for (auto role : kRoles) {
      std::fprintf(out, " %15s", formatBytes(static_cast<double>(r.peakByRole[static_cast<int>(role)])).c_str());
    }
    if (capacity > 0) std::fprintf(out, " %18s", formatHeadroom(capacity, r).c_str());
    std::fprintf(out, "\n");
  }
  if (capacity > 0) {
    std::fprintf(out, "headroom: %s less the rank's peak on the device\n", limits.capacityNote.c_str());
  }
  printHostMemoryTable(out, ranks);
}

// Who arrived last at the collectives, and what it cost the others (stats/stragglers.h).
void printStragglers(std::FILE* out, const std::vector<RankStats>& ranks) {
  if (ranks.size() < 2 ||
      std::none_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return r.groupCollectives > 0; })) {
    return;
  }
  std::fprintf(out,
               "\nStragglers: of the collectives one rank issued clearly last (past scheduling noise), how many\n"
               "were this rank's, and how long the others had waited for it where it was last\n");
  std::fprintf(out, "%-5s %12s %11s %16s\n", "rank", "last, of", "share", "others waited");
  for (const auto& r : ranks) {
    const std::string of = std::to_string(r.lastArrivals) + " / " + std::to_string(r.withAStraggler);
    std::fprintf(out, "%-5d %12s %10.0f%% %16s\n", r.rank, of.c_str(), 100.0 * r.lastArrivalShare,
                 trace::formatDuration(r.waitCausedSeconds * 1e9).c_str());
  }
}

}  // namespace

namespace {

// Per rank: its stages, its bubble per step and its share of the step beside the schedule's closed
// form (labelled a prediction), and the most micro-batches it held activations of.
void printPipelineTable(std::FILE* out, const config::RunConfig& config, const std::vector<RankStats>& ranks) {
  const auto shape = config::pipelineShapeOf(config);
  const auto form = config::bubbleClosedForm(shape);
  // The closed form is over the ideal time; as a share of the step it is f / (1 + f).
  const double predictedShare = form.fraction / (1 + form.fraction);
  std::fprintf(out, "\nPipeline: %s, P = %d, V = %d, M = %d (steps after the first)\n",
               config::modeName(shape.schedule), shape.ranks, shape.stagesPerRank, shape.microBatches);
  std::fprintf(out, "%-5s %-10s %12s %8s %12s %8s %16s %18s\n", "rank", "stages", "bubble/step", "of step", "planned",
               "of plan", "predicted share", "micro-batches held");
  for (const auto& r : ranks) {
    std::string stages;
    for (int s : r.pipelineStages) stages += (stages.empty() ? "" : ",") + std::to_string(s);
    std::fprintf(out, "%-5d %-10s %12s %7.1f%% %12s %7.1f%% %15.1f%% %18d\n", r.rank, stages.c_str(),
                 trace::formatDuration(r.bubbleSecondsPerStep * 1e9).c_str(), 100 * r.bubbleShare,
                 trace::formatDuration(r.plannedBubbleSecondsPerStep * 1e9).c_str(), 100 * r.plannedBubbleShare,
                 100 * predictedShare, r.peakMicroBatchesInFlight);
  }
  // The stage the others wait for: the rank computing the largest share of its step (a slow stage,
  // or the one with the head and the loss).
  const auto busiest = std::min_element(
      ranks.begin(), ranks.end(), [](const RankStats& a, const RankStats& b) { return a.bubbleShare < b.bubbleShare; });
  if (ranks.size() > 1) {
    std::fprintf(out, "busiest: rank %d, computing %.1f%% of its step: the stage the others wait for\n", busiest->rank,
                 100 * (1 - busiest->bubbleShare));
  }
  std::fprintf(out,
               "bubble: the time in a step with no forward or backward running on the rank (waiting on a "
               "receive, idle);\nplanned: the schedule laid out with this run's mean F, B, I and W times and no "
               "waiting, of the planned step (no optimizer);\npredicted share: PREDICTION, the closed form %s "
               "over the ideal time, as a share of the step\n",
               form.form.c_str());
}

}  // namespace

void printRunTables(std::FILE* out, const config::RunConfig& config, const std::vector<RankStats>& ranks,
                    const DeviceFacts& device) {
  const bool recorded = anyRecorded(ranks);
  const auto limits = deviceLimitsOf(config, device);
  if (recorded) {
    printMemoryTable(out, config, ranks, limits);
    printTrafficTable(out, ranks);
  } else {
    std::fprintf(out,
                 "\nMemory, collectives and overlap were not recorded (--recording %s): step "
                 "times and throughput only\n",
                 config::modeName(config.recording));
  }
  std::fprintf(out, "\nTime, throughput and time in collectives per rank per step (steps after the first)\n");
  const auto ops = opsShown(ranks);
  std::fprintf(out, "%-5s %9s %12s %12s %12s", "rank", "step ms", "samples/s", "tokens/s", "model FLOP/s");
  for (auto op : ops) std::fprintf(out, " %15s", trace::collectiveOpName(op));
  std::fprintf(out, " %8s %10s%s\n", "overlap", "exposed", limits.peakFlops > 0 ? "     MFU" : "");
  for (const auto& r : ranks) {
    std::fprintf(out, "%-5d %9.1f %12s %12s %12s", r.rank, r.steadyStepSeconds * 1e3,
                 trace::formatRate(r.samplesPerSecond, "").c_str(),
                 config.model == config::ModelKind::Gpt ? trace::formatRate(r.tokensPerSecond, "").c_str() : "-",
                 trace::formatRate(r.modelFlopsPerSecond, "").c_str());
    for (auto op : ops) {
      std::fprintf(out, " %15s",
                   recorded ? formatCollectiveTime(r.collectives[static_cast<int>(op)], r.recordedSteps).c_str()
                            : "not recorded");
    }
    if (recorded) {
      std::fprintf(out, " %7.1f%% %10s", r.overlapPercent,
                   trace::formatDuration(r.steadyExposedCommSeconds * 1e9).c_str());
    } else {
      std::fprintf(out, " %8s %10s", "-", "-");
    }
    if (limits.peakFlops > 0) std::fprintf(out, " %6.2f%%", 100.0 * r.mfu);
    std::fprintf(out, "\n");
  }
  if (limits.peakFlops > 0) std::fprintf(out, "MFU: model FLOP/s over %s\n", limits.peakNote.c_str());
  if (recorded) {
    std::fprintf(out,
                 "overlap: the share of collective time forward or backward compute hid; exposed: the rest, per\n"
                 "step, when the rank waited on the network with nothing to compute (HTA's comm/compute overlap)\n");
  }
  if (recorded) printStragglers(out, ranks);
  if (recorded && config.pp > 1) printPipelineTable(out, config, ranks);
  int64_t dropped = 0;
  for (const auto& r : ranks) dropped += r.droppedEvents;
  if (dropped > 0) {
    std::fprintf(out,
                 "warning: %lld events were dropped (recording buffers full); figures that "
                 "depend on them are incomplete\n",
                 static_cast<long long>(dropped));
  }
}

namespace {

// printComparisonTable's rows: one a figure, each strategy a column ("failed" where its run failed,
// "not recorded" where it ran with --recording off).
class ComparisonTable {
 public:
  ComparisonTable(std::FILE* out, const std::vector<StrategyColumn>& columns)
      : out(out), columns(columns), figures(comparisonFigures(comparedRuns(columns))) {}

  void header() const {
    std::fprintf(out, "\n%-30s", "");
    for (const auto& c : columns) std::fprintf(out, " %22s", c.strategy.c_str());
    std::fprintf(out, "\n");
  }
  void memoryRows() const;
  void stepRows() const;
  void stragglerRow() const;
  void collectiveRows() const;
  void sentRows() const;
  void overlapRows() const;
  void pipelineRows() const;

 private:
  static double maxOver(const std::vector<RankStats>& ranks, const std::function<double(const RankStats&)>& f) {
    double m = 0;
    for (const auto& r : ranks) m = std::max(m, f(r));
    return m;
  }
  static std::string recorded(const StrategyColumn& c, const std::function<std::string()>& cell) {
    return anyRecorded(c.ranks) ? cell() : std::string("not recorded");
  }
  static const RankStats* rank0(const StrategyColumn& c) { return c.ranks.empty() ? nullptr : &c.ranks.front(); }
  static std::vector<ComparedRun> comparedRuns(const std::vector<StrategyColumn>& columns) {
    std::vector<ComparedRun> runs;
    for (const auto& c : columns) runs.push_back({c.config.strategy, c.config.world, false, c.ok, &c.ranks});
    return runs;
  }
  void row(const char* name, const std::function<std::string(const StrategyColumn&)>& cell) const {
    std::fprintf(out, "%-30s", name);
    for (const auto& c : columns) std::fprintf(out, " %22s", c.ok ? cell(c).c_str() : "failed");
    std::fprintf(out, "\n");
  }
  // A row of the comparison's figures: `cell` formats column i's.
  void figureRow(const char* name, const std::function<std::string(const ComparisonFigures&)>& cell) const {
    row(name, [&](const StrategyColumn& c) { return cell(figures[static_cast<size_t>(&c - columns.data())]); });
  }
  // A figure of a run that recorded; "not recorded" for one that ran with --recording off.
  void recordedFigureRow(const char* name, const std::function<std::string(const ComparisonFigures&)>& cell) const {
    figureRow(name, [&](const ComparisonFigures& f) { return f.recorded ? cell(f) : std::string("not recorded"); });
  }

  std::FILE* out;
  const std::vector<StrategyColumn>& columns;
  const std::vector<ComparisonFigures> figures;  // column for column
};

void ComparisonTable::memoryRows() const {
  row("peak memory (max rank)", [&](const StrategyColumn& c) {
    return recorded(
        c, [&] { return formatBytes(maxOver(c.ranks, [](const RankStats& r) { return double(r.peakTotal); })); });
  });
  for (auto role : kRoles) {
    const std::string name = std::string("  ") + trace::memoryRoleName(role);
    row(name.c_str(), [&](const StrategyColumn& c) {
      return recorded(c, [&] {
        return formatBytes(
            maxOver(c.ranks, [&](const RankStats& r) { return double(r.peakByRole[static_cast<int>(role)]); }));
      });
    });
  }
  row("  activation saved (bwd)", [&](const StrategyColumn& c) {
    return recorded(c, [&] {
      return formatBytes(maxOver(c.ranks, [](const RankStats& r) { return double(r.activationSavedBytes); }));
    });
  });
  const auto hostPeak = [&](const StrategyColumn& c) {
    return maxOver(c.ranks, [](const RankStats& r) { return double(r.peakHost); });
  };
  if (std::any_of(columns.begin(), columns.end(), [&](const StrategyColumn& c) { return hostPeak(c) > 0; })) {
    row("peak host memory (--offload)",
        [&](const StrategyColumn& c) { return recorded(c, [&] { return formatBytes(hostPeak(c)); }); });
  }
  const auto capacityOf = [](const StrategyColumn& c) { return deviceLimitsOf(c.config, c.device).capacityBytes; };
  if (std::any_of(columns.begin(), columns.end(), [&](const StrategyColumn& c) { return capacityOf(c) > 0; })) {
    row("headroom (fullest rank)", [&](const StrategyColumn& c) {
      if (capacityOf(c) <= 0) return std::string("-");
      return recorded(c, [&] {
        const RankStats* fullest = nullptr;
        for (const auto& r : c.ranks) {
          if (!fullest || r.peakDevice > fullest->peakDevice) fullest = &r;
        }
        return fullest ? formatHeadroom(capacityOf(c), *fullest) : std::string("-");
      });
    });
  }
}

void ComparisonTable::stepRows() const {
  figureRow("step time (slowest rank)", [](const ComparisonFigures& f) { return formatMilliseconds(f.stepSeconds); });
  figureRow("samples/s (all ranks)",
            [](const ComparisonFigures& f) { return trace::formatRate(f.samplesPerSecond, ""); });
}

void ComparisonTable::stragglerRow() const {
  row("most often last (share)", [&](const StrategyColumn& c) {
    return recorded(c, [&] {
      const RankStats* last = mostOftenLast(c.ranks);
      if (!last) return std::string("-");
      char buf[48];
      std::snprintf(buf, sizeof buf, "rank %d (%.0f%%)", last->rank, 100.0 * last->lastArrivalShare);
      return std::string(buf);
    });
  });
}

void ComparisonTable::collectiveRows() const {
  std::vector<const RankStats*> firstRanks;
  for (const auto& c : columns) {
    if (const auto* r = rank0(c)) firstRanks.push_back(r);
  }
  for (auto op : collectiveOpsShown(firstRanks)) {
    // One figure of rank 0's collectives of this type per step, "-" where it ran none.
    const auto figure = [&](const std::function<std::string(const trace::CollectiveTotals&, int)>& format) {
      return [&, format](const StrategyColumn& c) {
        const auto* r = rank0(c);
        if (!r) return std::string("-");
        return recorded(c, [&] {
          const auto& t = r->collectives[static_cast<int>(op)];
          return t.count == 0 ? std::string("-") : format(t, r->recordedSteps);
        });
      };
    };
    const std::string name = std::string(trace::collectiveOpName(op)) + " per step: size";
    row(name.c_str(), figure([](const trace::CollectiveTotals& t, int steps) {
          return trace::formatCollectiveBytes(t, t.sizeBytes, steps);
        }));
    const std::string sent = std::string("  sent (") + trace::trafficBasis(op) + ")";
    row(sent.c_str(), figure([](const trace::CollectiveTotals& t, int steps) {
          return trace::formatCollectiveBytes(t, t.sentBytes, steps);
        }));
    row("  time", figure([](const trace::CollectiveTotals& t, int steps) {
          return trace::formatDuration(t.seconds * 1e9 / std::max(steps, 1));
        }));
  }
}

void ComparisonTable::sentRows() const {
  recordedFigureRow("sent per step (rank 0, ring)", [](const ComparisonFigures& f) { return sentPerStepText(f); });
  // Against the baseline strategy where strategies differ (not among one strategy's schedules).
  const bool strategiesDiffer = std::any_of(columns.begin(), columns.end(), [&](const StrategyColumn& c) {
    return c.config.strategy != columns.front().config.strategy;
  });
  if (strategiesDiffer &&
      std::any_of(figures.begin(), figures.end(), [](const ComparisonFigures& f) { return f.baseline >= 0; })) {
    figureRow((std::string("  ratio to ") + config::baselineStrategy().name).c_str(), [](const ComparisonFigures& f) {
      return f.baseline >= 0 ? formatRatio(f.sentRatioToBaseline) : std::string("-");
    });
  }
}

void ComparisonTable::overlapRows() const {
  if (std::any_of(figures.begin(), figures.end(), [](const ComparisonFigures& f) {
        return f.recomputeSecondsPerStep > 0;
      })) {  // activation checkpointing: what the memory it saves costs in compute
    recordedFigureRow("recompute per step", [](const ComparisonFigures& f) {
      return trace::formatDuration(1e9 * f.recomputeSecondsPerStep);
    });
  }
  recordedFigureRow("exposed comm per step",
                    [](const ComparisonFigures& f) { return trace::formatDuration(1e9 * f.exposedCommSeconds); });
  recordedFigureRow("comm/compute overlap", [](const ComparisonFigures& f) { return formatPercent(f.overlapPercent); });
}

// Under --pp (compare --schedules): each schedule's bubble three ways (measured, planned with the
// run's own action times, the closed form's prediction), the activations it held and what crossed
// between stages.
void ComparisonTable::pipelineRows() const {
  if (std::none_of(columns.begin(), columns.end(), [](const StrategyColumn& c) { return c.config.pp > 1; })) return;
  const auto pipelined = [&](const StrategyColumn& c, const std::function<std::string()>& cell) {
    return c.config.pp > 1 ? recorded(c, cell) : std::string("-");
  };
  const auto worstRank = [&](const char* name, const std::function<std::string(const StrategyColumn&)>& cell) {
    row(name, [&](const StrategyColumn& c) { return pipelined(c, [&] { return cell(c); }); });
  };
  worstRank("bubble/step (worst rank)", [&](const StrategyColumn& c) {
    return trace::formatDuration(1e9 * maxOver(c.ranks, [](const RankStats& r) { return r.bubbleSecondsPerStep; }));
  });
  worstRank("  of its step", [&](const StrategyColumn& c) {
    return formatPercent(100 * maxOver(c.ranks, [](const RankStats& r) { return r.bubbleShare; }));
  });
  worstRank("  planned, of the plan", [&](const StrategyColumn& c) {
    return formatPercent(100 * maxOver(c.ranks, [](const RankStats& r) { return r.plannedBubbleShare; }));
  });
  row("  closed form (PREDICTION)", [&](const StrategyColumn& c) {
    if (c.config.pp < 2) return std::string("-");
    const double f = config::bubbleClosedForm(config::pipelineShapeOf(c.config)).fraction;
    return formatPercent(100 * f / (1 + f));  // over the ideal time, as a share of the step
  });
  worstRank("micro-batches held (max)", [&](const StrategyColumn& c) {
    return std::to_string(
        static_cast<int>(maxOver(c.ranks, [](const RankStats& r) { return double(r.peakMicroBatchesInFlight); })));
  });
  worstRank("sent to stages/step (max)", [&](const StrategyColumn& c) {
    const int pipe = static_cast<int>(trace::ProcessGroup::Pipe);
    return formatBytes(maxOver(c.ranks, [&](const RankStats& r) {
      return r.recordedSteps > 0 ? double(r.sentBytesByGroup[pipe]) / r.recordedSteps : 0.0;
    }));
  });
}

}  // namespace

void printComparisonTable(std::FILE* out, const std::vector<StrategyColumn>& columns) {
  const ComparisonTable table(out, columns);
  table.header();
  table.memoryRows();
  table.stepRows();
  table.stragglerRow();
  table.collectiveRows();
  table.sentRows();
  table.overlapRows();
  table.pipelineRows();
  if (std::any_of(columns.begin(), columns.end(), [](const StrategyColumn& c) { return anyRecorded(c.ranks); })) {
    std::fprintf(out, "Collectives: rank 0's, per step.\n%s\n", kTrafficLegend);
  }
  for (const auto& c : columns) {
    if (!c.ok) std::fprintf(out, "%s failed: %s\n", c.strategy.c_str(), c.error.c_str());
  }
}

}  // namespace shardscope::stats
