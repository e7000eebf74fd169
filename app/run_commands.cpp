#include "app/run_commands.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/interrupt.h"
#include "estimate/scaling_table.h"
#include "stats/report_tables.h"
#include "app/slow_step_notice.h"
#include "app/terminal_gate.h"
#include "config/model_layout.h"
#include "engine/launch/run_summary.h"
#include "files/output_file.h"
#include "files/unfinished_outputs.h"
#include "config/tensor_parallel.h"
#include "app/schedule_command.h"
#include "trace/run_recording.h"

namespace shardscope::app {

int failUsage(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

namespace {

void printBanner(const shardscope::config::RunConfig& config) {
  std::printf("shardscope run: %s, %d layers, hidden %d%s, %s (%s), world %d, batch %d, %d steps, %s\n",
              config::modeName(config.model), config.layers, config.hidden,
              shardscope::config::trainingLabel(config).c_str(), shardscope::config::strategyName(config.strategy),
              shardscope::config::zeroName(config.strategy).c_str(), config.world, config.batch, config.steps,
              config::modeName(config.device));
  if (config.pp > 1) printPipelinePlan(config);
  if (config.tp > 1) {
    const int dataRanks = shardscope::config::dataRankCount(config);
    std::printf("mesh: %d data x %d tensor (tensor groups of %d consecutive ranks, each on one slice of the batch)\n",
                dataRanks, config.tp, config.tp);
    if (shardscope::config::traitsOf(config.strategy).replicatesShardGroups) {
      std::printf(
          "the data ranks: %d replicas x %d shard (shard groups of %d data ranks, as (dp_replicate, dp_shard, tp))\n",
          shardscope::config::replicaCount(config), shardscope::config::shardGroupSize(config),
          shardscope::config::shardGroupSize(config));
    }
    if (config.sequenceParallel) {
      std::printf(
          "sequence parallel: each rank of a tensor group keeps %d of the %d tokens between its blocks' "
          "linears; all-gathers and reduce-scatters where --tp alone all-reduces\n",
          config.seq / config.tp, config.seq);
    }
    for (const auto& linear : shardscope::config::replicatedLinears(config)) {
      std::printf("%s: whole on every rank (the mlp's linears pair column-then-row; their count is odd)\n",
                  linear.c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace

shardscope::engine::RunResult trainWithProgress(const shardscope::config::RunConfig& config) {
  shardscope::engine::RunCallbacks callbacks;
  using Clock = shardscope::app::SlowStepNotice::Clock;
  shardscope::app::SlowStepNotice slowStep(config.world, config.steps, Clock::now());
  callbacks.onStep = [&](int step, double loss, double seconds) {
    std::printf("step %d/%d  loss %.6f  step time %.1f ms\n", step + 1, config.steps, loss, seconds * 1e3);
    std::fflush(stdout);
    slowStep.stepEnded(step, Clock::now());
  };
  // A step-gated run waits on the user, not on work: it gets no notices.
  if (config.stepGate == shardscope::config::StepGateMode::Off) {
    callbacks.onEvent = [&](const shardscope::trace::Event& e) { slowStep.event(e); };
    callbacks.onIdle = [&] {
      const std::string line = slowStep.poll(Clock::now());
      if (line.empty()) return;
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  }
  shardscope::app::TerminalGate gate;
  callbacks.shouldStop = [&] { return shardscope::app::interruptSignal() != 0 || gate.stopRequested(); };
  if (config.stepGate != shardscope::config::StepGateMode::Off) {
    std::printf(
        "step gate (%s): the ranks wait before each %s. Enter: go on by one; c + Enter: "
        "continue to the end; q + Enter: stop.\n",
        config::modeName(config.stepGate),
        config.stepGate == shardscope::config::StepGateMode::Step ? "training step" : "event group");
    std::fflush(stdout);
    callbacks.onGate = [&](const shardscope::engine::GateStatus& status) { gate.show(status); };
    callbacks.gateCommand = [&] { return gate.command(); };
  }
  return shardscope::app::runTraining(config, selfExecutable(), callbacks);
}

namespace {

// What a run that was stopped kept on disk, for the message: " Kept: summary s.json, trace t.json."
std::string keptOutputs(const shardscope::config::RunConfig& config) {
  std::string kept;
  for (const auto& [what, path] : {std::pair<const char*, const std::string&>{"summary", config.summaryPath},
                                   {"trace", config.tracePath},
                                   {"memory CSV", config.memoryCsvPath}}) {
    if (!path.empty()) kept += std::string(kept.empty() ? "" : ", ") + what + " " + path;
  }
  return kept.empty() ? "" : " Kept what was recorded: " + kept + ".";
}

// After a signal: one line saying what happened and what was kept; the exit status 128 + signal.
int reportInterrupted(int signal, size_t stepsDone, int steps, const std::string& kept) {
  std::fprintf(stderr, "shardscope: interrupted by %s after %zu of %d steps; the ranks were stopped.%s\n",
               shardscope::app::signalName(signal).c_str(), stepsDone, steps, kept.c_str());
  return 128 + signal;
}

// Each output that could not be written, one line each; true when there was one.
bool reportOutputErrors(const std::vector<std::string>& errors) {
  for (const auto& e : errors) std::fprintf(stderr, "shardscope: %s\n", e.c_str());
  return !errors.empty();
}

void reportWarnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "shardscope: warning: %s\n", w.c_str());
}

}  // namespace

int runHeadless(const shardscope::config::RunConfig& config) {
  printBanner(config);
  // For a second Ctrl-C, which ends the process at once, to say which of them it kept.
  shardscope::files::announceOutputs(
      {{"summary", config.summaryPath}, {"trace", config.tracePath}, {"memory CSV", config.memoryCsvPath}});
  auto result = trainWithProgress(config);
  if (result.recording.ranks() > 0 && !result.losses.empty()) {
    shardscope::stats::printRunTables(
        stdout, config,
        shardscope::stats::computeRankStats(config, result.recording, result.parameterCount, result.device),
        result.device);
  }
  reportWarnings(result.warnings);
  const bool outputFailed = reportOutputErrors(result.outputErrors);
  if (const int signal = shardscope::app::interruptSignal()) {
    return reportInterrupted(signal, result.losses.size(), config.steps, outputFailed ? "" : keptOutputs(config));
  }
  if (outputFailed && result.ok) return 1;
  if (!result.ok) {
    std::fprintf(stderr, "shardscope: run failed: %s\n", result.error.c_str());
    return 1;
  }
  // Trained, but recorded only in part: never "ok" in silence (exit 3, summary status "incomplete").
  if (const std::string dropped = shardscope::trace::droppedEventsText(result.recording); !dropped.empty()) {
    std::fprintf(stderr,
                 "shardscope: recording incomplete: the run trained every step, but %s: their buffers were "
                 "full. The figures and the trace miss them. Record less (--recording off) or a shorter run, or "
                 "give the controller a free core.\n",
                 dropped.c_str());
    return 3;
  }
  std::printf("done: %d ranks on %s, %lld parameters", result.worldSize, result.deviceDescription.c_str(),
              static_cast<long long>(result.parameterCount));
  if (config.loraRank > 0) {
    std::printf(" (%lld of them trained: the LoRA adapters)",
                static_cast<long long>(shardscope::config::trainableElements(config)));
  }
  std::printf("\n");
  return 0;
}

namespace {

// FILE.json -> FILE.<strategy>.json, so one compare writes one file per strategy.
std::string perStrategyPath(const std::string& path, const std::string& strategy) {
  if (path.empty()) return path;
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return path + "." + strategy;
  }
  return path.substr(0, dot) + "." + strategy + path.substr(dot);
}

// One run of a comparison: its name in tables, summaries and file names ("full_shard", or
// "full_shard@4" when the comparison spans world sizes).
// A run's name among `runs`: its strategy, its schedule where the runs' schedules differ
// ("1f1b", "full_shard-1f1b" among several strategies too: names go into file names), its world size across worlds
// ("ddp@4").
std::string comparisonName(const shardscope::config::RunConfig& run,
                           const std::vector<shardscope::config::RunConfig>& runs, bool acrossWorlds) {
  const auto differ = [&](auto field) {
    return std::any_of(runs.begin(), runs.end(), [&](const auto& r) { return field(r) != field(run); });
  };
  const bool strategies = differ([](const shardscope::config::RunConfig& r) { return r.strategy; });
  const bool schedules = differ([](const shardscope::config::RunConfig& r) { return r.schedule; });
  std::string name = strategies || !schedules ? shardscope::config::strategyName(run.strategy) : "";
  if (schedules) name += (name.empty() ? "" : "-") + std::string(shardscope::config::modeName(run.schedule));
  return acrossWorlds ? name + "@" + std::to_string(run.world) : name;
}

}  // namespace

int runCompare(const shardscope::config::RunConfig& base, const std::vector<shardscope::config::RunConfig>& runs,
               bool acrossWorlds) {
  const auto summaryAtStart = shardscope::files::stampOf(base.summaryPath);
  std::vector<shardscope::stats::StrategyColumn> columns;
  nlohmann::json all = nlohmann::json::object();
  bool outputFailed = false;
  std::vector<std::pair<std::string, std::string>> outputs = {{"summary", base.summaryPath}};
  for (const auto& run : runs) {
    const std::string name = comparisonName(run, runs, acrossWorlds);
    outputs.insert(outputs.end(), {{"trace", perStrategyPath(base.tracePath, name)},
                                   {"memory CSV", perStrategyPath(base.memoryCsvPath, name)}});
  }
  shardscope::files::announceOutputs(outputs);  // for a second Ctrl-C to say which it kept
  for (const auto& run : runs) {
    if (shardscope::app::interruptSignal()) break;  // the runs not started are left out
    const std::string name = comparisonName(run, runs, acrossWorlds);
    shardscope::config::RunConfig config = run;
    config.summaryPath.clear();
    config.tracePath = perStrategyPath(base.tracePath, name);
    config.memoryCsvPath = perStrategyPath(base.memoryCsvPath, name);
    if (!base.exportDir.empty()) config.exportDir = base.exportDir + "/" + name;
    printBanner(config);
    auto result = trainWithProgress(config);
    shardscope::stats::StrategyColumn column;
    column.strategy = name;
    column.config = config;
    column.device = result.device;
    column.ok = result.ok;
    column.error = result.error;
    column.ranks = shardscope::stats::computeRankStats(config, result.recording, result.parameterCount, result.device);
    reportWarnings(result.warnings);
    outputFailed |= reportOutputErrors(result.outputErrors);
    all[name] = shardscope::engine::summaryJson(config, result, result.recording);
    columns.push_back(std::move(column));
  }
  shardscope::stats::printComparisonTable(stdout, columns);
  if (acrossWorlds) shardscope::estimate::printScalingTable(stdout, columns);
  if (!base.summaryPath.empty()) {
    if (auto warning = shardscope::files::changedMeanwhile(base.summaryPath, summaryAtStart, "summary");
        !warning.empty()) {
      reportWarnings({warning});
    }
    const std::string text = nlohmann::json{{"schema", "shardscope.compare/1"}, {"runs", all}}.dump(2);
    if (auto error =
            shardscope::files::writeOutputFile(base.summaryPath, [&](std::ostream& out) { out << text << "\n"; })) {
      outputFailed |= reportOutputErrors({*error});
    }
  }
  if (const int signal = shardscope::app::interruptSignal()) {
    const size_t done = columns.empty()                ? 0
                        : columns.back().ranks.empty() ? 0
                                                       : columns.back().ranks.front().stepSeconds.size();
    return reportInterrupted(
        signal, done, base.steps,
        " " + std::to_string(columns.size()) + " of " + std::to_string(runs.size()) + " runs started" +
            (base.summaryPath.empty() ? "" : "; the summary " + base.summaryPath + " has them") + ".");
  }
  for (const auto& c : columns) {
    if (!c.ok) return 1;
  }
  return outputFailed ? 1 : 0;
}

}  // namespace shardscope::app
