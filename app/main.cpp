// shardscope: the one executable. Subcommands:
//   run      train headlessly: one process per rank, progress per step, tables at the end
//   compare  the same run under several strategies (--strategies), one table side by side
//   estimate predict what each rank holds and sends (closed forms, labelled as predictions)
//   view     browse a saved trace or summary in the window
//   worker   one rank (started by `run`, or by torchrun/srun/mpirun with their variables)
//   listen   collect a launched job's events as its ranks stream them
// With no command, the desktop app opens.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/cli_options.h"
#include "app/command_line_parse.h"
#include "app/estimate_command.h"
#include "app/gui_app.h"
#include "app/interrupt.h"
#include "app/job_summary.h"
#include "app/lesson_command.h"
#include "app/report_tables.h"
#include "app/slow_step_notice.h"
#include "app/terminal_gate.h"
#include "engine/collector_link.h"
#include "engine/event_collector.h"
#include "engine/rank_worker.h"
#include "engine/run_controller.h"
#include "engine/run_summary.h"
#include "estimate/memory_preflight.h"
#include "config/model_layout.h"
#include "files/file_text.h"
#include "files/output_file.h"
#include "trace/view_tabs.h"

namespace {

std::string selfExecutable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "shardscope";
  path[n] = '\0';
  return path;
}

int failUsage(const std::string& message) {
  std::fprintf(stderr, "shardscope: error: %s\n", message.c_str());
  return 2;
}

void printBanner(const shardscope::RunConfig& config) {
  std::printf("shardscope run: %s, %d layers, hidden %d%s, %s (%s), world %d, batch %d, %d steps, %s\n",
              modeName(config.model), config.layers, config.hidden, shardscope::trainingLabel(config).c_str(),
              shardscope::strategyName(config.strategy), shardscope::zeroName(config.strategy).c_str(), config.world,
              config.batch, config.steps, modeName(config.device));
  std::fflush(stdout);
}

shardscope::RunResult trainWithProgress(const shardscope::RunConfig& config) {
  shardscope::RunCallbacks callbacks;
  using Clock = shardscope::app::SlowStepNotice::Clock;
  shardscope::app::SlowStepNotice slowStep(config.world, config.steps, Clock::now());
  callbacks.onStep = [&](int step, double loss, double seconds) {
    std::printf("step %d/%d  loss %.6f  step time %.1f ms\n", step + 1, config.steps, loss,
                seconds * 1e3);
    std::fflush(stdout);
    slowStep.stepEnded(step, Clock::now());
  };
  // A step-gated run waits on the user, not on work: it gets no notices.
  if (config.stepGate == shardscope::StepGateMode::Off) {
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
  if (config.stepGate != shardscope::StepGateMode::Off) {
    std::printf("step gate (%s): the ranks wait before each %s. Enter: go on by one; c + Enter: "
                "continue to the end; q + Enter: stop.\n",
                modeName(config.stepGate), config.stepGate == shardscope::StepGateMode::Step ? "training step" : "event group");
    std::fflush(stdout);
    callbacks.onGate = [&](const shardscope::GateStatus& status) { gate.show(status); };
    callbacks.gateCommand = [&] { return gate.command(); };
  }
  return shardscope::runTraining(config, selfExecutable(), callbacks);
}

// What a run that was stopped kept on disk, for the message: " Kept: summary s.json, trace t.json."
std::string keptOutputs(const shardscope::RunConfig& config) {
  std::string kept;
  for (const auto& [what, path] : {std::pair<const char*, const std::string&>{"summary", config.summaryPath},
                                   {"trace", config.tracePath}, {"memory CSV", config.memoryCsvPath}}) {
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

int runHeadless(const shardscope::RunConfig& config) {
  printBanner(config);
  auto result = trainWithProgress(config);
  if (result.recording.ranks() > 0 && !result.losses.empty()) {
    shardscope::app::printRunTables(
        stdout, config, shardscope::computeRankStats(config, result.recording, result.parameterCount, result.device),
        result.device);
  }
  const bool outputFailed = reportOutputErrors(result.outputErrors);
  if (const int signal = shardscope::app::interruptSignal()) {
    return reportInterrupted(signal, result.losses.size(), config.steps,
                             outputFailed ? "" : keptOutputs(config));
  }
  if (outputFailed && result.ok) return 1;
  if (!result.ok) {
    std::fprintf(stderr, "shardscope: run failed: %s\n", result.error.c_str());
    return 1;
  }
  std::printf("done: %d ranks on %s, %lld parameters", result.worldSize,
              result.deviceDescription.c_str(), static_cast<long long>(result.parameterCount));
  if (config.loraRank > 0) {
    std::printf(" (%lld of them trained: the LoRA adapters)",
                static_cast<long long>(shardscope::trainableElements(config)));
  }
  std::printf("\n");
  return 0;
}

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
std::string comparisonName(const shardscope::RunConfig& run, bool acrossWorlds) {
  const std::string name = shardscope::strategyName(run.strategy);
  return acrossWorlds ? name + "@" + std::to_string(run.world) : name;
}

int runCompare(const shardscope::RunConfig& base, const std::vector<shardscope::RunConfig>& runs, bool acrossWorlds) {
  std::vector<shardscope::app::StrategyColumn> columns;
  nlohmann::json all = nlohmann::json::object();
  bool outputFailed = false;
  for (const auto& run : runs) {
    if (shardscope::app::interruptSignal()) break;  // the runs not started are left out
    const std::string name = comparisonName(run, acrossWorlds);
    shardscope::RunConfig config = run;
    config.summaryPath.clear();
    config.tracePath = perStrategyPath(base.tracePath, name);
    config.memoryCsvPath = perStrategyPath(base.memoryCsvPath, name);
    if (!base.exportDir.empty()) config.exportDir = base.exportDir + "/" + name;
    printBanner(config);
    auto result = trainWithProgress(config);
    shardscope::app::StrategyColumn column;
    column.strategy = name;
    column.config = config;
    column.device = result.device;
    column.ok = result.ok;
    column.error = result.error;
    column.ranks = shardscope::computeRankStats(config, result.recording, result.parameterCount, result.device);
    outputFailed |= reportOutputErrors(result.outputErrors);
    all[name] = shardscope::summaryJson(config, result, result.recording);
    columns.push_back(std::move(column));
  }
  shardscope::app::printComparisonTable(stdout, columns);
  if (acrossWorlds) shardscope::app::printScalingTable(stdout, columns);
  if (!base.summaryPath.empty()) {
    const std::string text = nlohmann::json{{"schema", "shardscope.compare/1"}, {"runs", all}}.dump(2);
    if (auto error = shardscope::files::writeOutputFile(base.summaryPath,
                                                        [&](std::ostream& out) { out << text << "\n"; })) {
      outputFailed |= reportOutputErrors({*error});
    }
  }
  if (const int signal = shardscope::app::interruptSignal()) {
    const size_t done = columns.empty() ? 0 : columns.back().ranks.empty() ? 0 : columns.back().ranks.front().stepSeconds.size();
    return reportInterrupted(signal, done, base.steps,
                             " " + std::to_string(columns.size()) + " of " + std::to_string(runs.size()) +
                                 " runs started" + (base.summaryPath.empty() ? "" : "; the summary " + base.summaryPath + " has them") + ".");
  }
  for (const auto& c : columns) {
    if (!c.ok) return 1;
  }
  return outputFailed ? 1 : 0;
}

}  // namespace

int dispatch(int argc, char** argv);

// Anything unexpected still ends with one readable line, never an abort.
int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "shardscope: error: %s\n", ex.what());
    return 1;
  }
}

int dispatch(int argc, char** argv) {
  CLI::App app{
      "shardscope: run real DDP and FSDP training across rank processes and see what each rank\n"
      "holds in memory and sends over the wire."};
  app.require_subcommand(0, 1);
  app.footer("Run 'shardscope COMMAND --help' for the options of a command.\n"
             "With no command, shardscope opens the desktop app (needs a display).");

  shardscope::app::RunOptions runOptions;
  auto* run = app.add_subcommand("run", "train headlessly, one OS process per rank");
  runOptions.addTo(*run);
  shardscope::app::WindowChoice runWindow;
  run->add_option("--screenshot", runWindow.screenshotPath,
                  "render the app headlessly (a hidden window; use xvfb-run without a display), "
                  "run, and write a PNG of the window to FILE when the run has ended");

  shardscope::app::RunOptions compareOptions;
  auto* compare = app.add_subcommand(
      "compare", "run several strategies (ddp, full_shard and shard_grad_op unless --strategies "
                 "says otherwise) one after another on the same model and data, and print them "
                 "side by side (--strategy is ignored; --trace, --memory-csv and --export get one "
                 "file or directory per strategy)");
  compareOptions.addTo(*compare);
  std::string compareStrategyList;
  for (auto s : shardscope::defaultCompareStrategies()) {
    compareStrategyList += (compareStrategyList.empty() ? "" : ",") + std::string(shardscope::strategyName(s));
  }
  std::string compareWorldList;
  compare->add_option("--worlds", compareWorldList,
                      "run each strategy at each of these world sizes (e.g. 1,2,4,8) on the same global "
                      "--batch, and show per-rank peak memory by role against N, measured, beside the "
                      "estimator's prediction of the model states [default: --world alone]");
  compare->add_option("--strategies", compareStrategyList,
                      "the strategies to run, in order, e.g. ddp,zero1,shard_grad_op,full_shard for "
                      "ZeRO stages 0 to 3 [default: ddp,full_shard,shard_grad_op]");
  shardscope::app::WindowChoice compareWindow;
  compare->add_option("--screenshot", compareWindow.screenshotPath,
                      "render the app headlessly, compare, and write a PNG of the window to FILE");

  shardscope::app::RunOptions estimateRunOptions;
  shardscope::app::EstimateOptions estimateOptions;
  auto* estimate = app.add_subcommand(
      "estimate", "predict, without running, what each rank holds and sends per step for the run "
                  "options (every strategy), or with --params whether a model of that size "
                  "fits on so many GPUs; closed forms, labelled as predictions (docs/estimate.md)");
  estimateRunOptions.addTo(*estimate, /*withOutputs=*/false);
  shardscope::app::addEstimateOptions(*estimate, estimateOptions);

  std::vector<std::string> viewPaths;
  shardscope::app::WindowChoice viewWindow;
  auto* view = app.add_subcommand("view", "browse a saved trace or summary in the window, without running anything");
  view->add_option("FILE", viewPaths,
                   "a trace (--trace FILE) or a summary (--summary FILE) of run or compare; a job's --trace-dir; "
                   "a PyTorch job's torch.profiler traces: their directory (rank-R.pt.trace.json, with the CUDA "
                   "memory snapshots rank-R.memory.pickle beside them read as the GPU ranks' memory), or its "
                   "per-rank files, named any way; CUDA memory snapshots on their own, memory only "
                   "(docs/profiler.md); several recordings open side by side (e.g. a run's --trace beside a "
                   "PyTorch job's directory)")
      ->required();
  view->add_option("--screenshot", viewWindow.screenshotPath,
                   "render headlessly and write a PNG of the window to FILE, then exit");
  std::string viewSummary;
  view->add_option("--summary", viewSummary,
                   "for a job's --trace-dir DIR, or its torch.profiler traces or CUDA memory snapshots: write its summary "
                   "JSON (as run --summary, with each rank's clock against rank 0's) to FILE instead of opening the window");

  std::string lessonName;
  shardscope::app::LessonOptions lessonOptions;
  shardscope::app::WindowChoice lessonWindow;
  auto* lesson = app.add_subcommand(
      "lesson", "list the lessons, or run one here: its runs, its captions, and its claims checked on what the runs "
                "measured (exit 1 if one does not hold); 'shardscope --lesson NAME' opens it in the app");
  lesson->add_option("NAME", lessonName, "a lesson (assets/lessons/NAME.json) or a lesson file; none: list them");
  lesson->add_option("--trace-dir", lessonOptions.traceDir, "write each run's trace there, as LABEL.json (Perfetto, shardscope view)");
  lesson->add_flag("--predict", lessonOptions.predict,
                   "predict first (interview practice): answer the lesson's questions before its runs, scored after them");
  lesson->add_option("--answers", lessonOptions.answers,
                     "with --predict: the answers, ';' between them (e.g. '30 MiB;ddp,full_shard'), instead of asking");
  lesson->add_option("--screenshot", lessonWindow.screenshotPath,
                     "open the lesson in a hidden window instead, run it, and write a PNG of caption --caption to FILE");
  lesson->add_option("--caption", lessonWindow.caption, "with --screenshot: the caption to show, from 1 [default: 1]");
  lesson->add_option("--window-size", lessonWindow.windowSize, "with --screenshot: the window's WIDTHxHEIGHT [default: 1600x1000]");

  shardscope::app::RunOptions workerOptions;
  auto* worker = app.add_subcommand(
      "worker", "run one rank; reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT "
                "(as set by torchrun)");
  workerOptions.addTo(*worker);
  std::string workerTraceDir;
  worker->add_option("--trace-dir", workerTraceDir,
                     "record this rank into DIR/rank-R.events (rank 0 also writes DIR/config.json), for "
                     "'shardscope view DIR' to merge the job's ranks afterwards; DIR is created, and shared "
                     "or gathered from every host");
  double workerClockEvery = 60;
  worker->add_option("--clock-every", workerClockEvery,
                     "with --trace-dir or --collector: measure each rank's clock against rank 0's again every "
                     "SECONDS between steps (besides at the start and the end), to follow a drifting host; 0: "
                     "start and end only [default: 60]")
      ->check(CLI::Range(0.0, 86400.0 * 365));
  std::string workerCollector;
  worker->add_option("--collector", workerCollector,
                     "stream this rank's events, live, to 'shardscope listen' at HOST:PORT (presenting "
                     "SHARDSCOPE_COLLECTOR_TOKEN when set); with --trace-dir too, a rank that cannot reach it, or "
                     "loses it, writes its file instead");

  shardscope::CollectorOptions listenOptions;
  std::string listenTokenFile;
  auto* listen = app.add_subcommand(
      "listen", "collect a job's events as its ranks stream them ('shardscope worker --collector HOST:PORT' under "
                "torchrun or srun): one file per rank in --trace-dir DIR for 'shardscope view DIR', progress here");
  listen->add_option("--port", listenOptions.port, "the port to listen on [default: 29700]");
  listen->add_option("--bind", listenOptions.bindAddress,
                     "the address to listen on; anything but loopback needs a token [default: 127.0.0.1]");
  listen->add_option("--trace-dir", listenOptions.dir, "where each rank's events go (created)")->required();
  bool listenWindow = false;
  shardscope::app::WindowChoice listenWindowChoice;
  listen->add_flag("--window", listenWindow, "draw the job in the app's window as its ranks stream (Listen mode)");
  listen->add_option("--screenshot", listenWindowChoice.screenshotPath,
                     "with the window hidden: write a PNG of it to FILE once every rank has gone");
  listen->add_option("--window-size", listenWindowChoice.windowSize, "with the window: WIDTHxHEIGHT [default: 1600x1000]");
  listen->add_option("--token-file", listenTokenFile,
                     "a file whose first line every rank must present (as SHARDSCOPE_COLLECTOR_TOKEN); default: "
                     "SHARDSCOPE_COLLECTOR_TOKEN from the environment");

  std::string tabHelp = "with --screenshot: the tab below the timelines to show:";
  for (const auto& tab : shardscope::trace::viewTabs()) {
    tabHelp += std::string(tab.name == shardscope::trace::viewTabs().front().name ? " " : " | ") + tab.name + " (" + tab.shows + ")";
  }
  tabHelp += " [default: " + std::string(shardscope::trace::viewTabs().front().name) + "]";
  for (auto [command, choice] : {std::pair{run, &runWindow}, std::pair{compare, &compareWindow},
                                 std::pair{view, &viewWindow}}) {
    command->add_option("--tab", choice->tab, tabHelp);
    command->add_option("--at", choice->at,
                        "with the window: put the playhead at a time (12.5ms, 800us, 1.2s) or at an event group "
                        "by its label, in step S with @S (e.g. 'backward blocks.1@1'); for a run, once it has ended");
    command->add_option("--zoom", choice->zoom,
                        "with the window: show only FROM..TO of the timelines, each a time or an event group as --at "
                        "takes it (e.g. 9.2s..12s, or 'step start@1..optimizer step@3'); the wheel zooms from there");
    command->add_option("--window-size", choice->windowSize, "the window's WIDTHxHEIGHT, e.g. 1920x1080 [default: 1600x1000]");
    command->add_option("--focus", choice->focus,
                        "with the window: show only this strategy's session, full screen (F in the app)");
  }
  // Projector mode, for the app itself as for a screenshot.
  shardscope::app::WindowChoice appWindow;
  std::string appLesson;
  bool appPredict = false;
  app.add_flag("--predict", appPredict, "with --lesson: predict first (interview practice): the lesson's questions "
                                        "before its runs, scored after them");
  app.add_option("--lesson", appLesson, "open the app on a lesson: its runs start, its captions lead through them "
                                        "(N / P); 'shardscope lesson' lists the lessons");
  for (auto [command, choice] : {std::pair{&app, &appWindow}, std::pair{run, &runWindow},
                                 std::pair{compare, &compareWindow}, std::pair{view, &viewWindow},
                                 std::pair{lesson, &lessonWindow}}) {
    command->add_option("--ui-scale", choice->uiScale,
                        "with the window: text and sizes x SCALE, 0.75 to 3 (1.5 for a projector; Ctrl +/- in "
                        "the app) [default: 1]");
    command->add_flag("--high-contrast", choice->highContrast,
                      "with the window: black background, white text, brighter colours (H in the app)");
    command->add_option("--memory-scale", choice->memoryScale,
                        "with the window: shared (every session's memory lanes on one scale) or own (each to its "
                        "own peak; S in the app) [default: shared]");
  }
  for (auto [command, choice] : {std::pair{&app, &appWindow}, std::pair{run, &runWindow},
                                 std::pair{compare, &compareWindow}, std::pair{lesson, &lessonWindow},
                                 std::pair{listen, &listenWindowChoice}}) {
    command->add_option("--window-events", choice->windowEvents,
                        "with the window: the most events its runs hold in detail, over their ranks (about 70 to "
                        "120 MB a million; a compare's runs share them); a longer run folds its oldest steps: the figures still count them, "
                        "the timeline shows the newer ones, and --trace keeps them all on disk [default: 8M]");
  }

  if (auto stop = shardscope::app::parseCommandLine(app, argc, argv)) return *stop;

  for (const auto* choice : {&runWindow, &compareWindow, &viewWindow}) {
    if (!choice->tab.empty() && !shardscope::app::knownTab(choice->tab)) {
      return failUsage("--tab '" + choice->tab + "' is not a tab: choose one of " + shardscope::trace::viewTabNames());
    }
  }
  for (const auto* choice : {&appWindow, &runWindow, &compareWindow, &viewWindow, &lessonWindow, &listenWindowChoice}) {
    int width = 0, height = 0;
    float scale = 1;
    if (auto err = shardscope::app::parseWindowSize(choice->windowSize, width, height)) return failUsage(*err);
    if (auto err = shardscope::app::parseUiScale(choice->uiScale, scale)) return failUsage(*err);
    if (auto err = shardscope::app::checkMemoryScale(choice->memoryScale)) return failUsage(*err);
    size_t events = 0;
    if (auto err = shardscope::app::parseWindowEvents(choice->windowEvents, events)) return failUsage(*err);
  }
  for (const auto* choice : {&runWindow, &compareWindow}) {  // `view` always opens the window
    if (choice->setsUpWindow() && choice->screenshotPath.empty()) {
      return failUsage("--tab, --at, --zoom, --window-size, --focus, --ui-scale, --high-contrast, --memory-scale and "
                       "--window-events set up the window, and run/compare open one only with --screenshot FILE: "
                       "add it, or drop them "
                       "(or open the app: shardscope --ui-scale 1.5)");
    }
  }

  if (worker->parsed()) {
    shardscope::RunConfig config;
    if (auto err = workerOptions.resolve(config)) return failUsage(*err);
    // Under torchrun no controller made --export's directory; every rank may (mkdir -p is idempotent).
    if (auto err = shardscope::makeOutputDirectories(config)) return failUsage(*err);
    shardscope::WorkerRecording recording;
    recording.traceDir = workerTraceDir;
    recording.clockEverySeconds = workerClockEvery;
    if (!workerCollector.empty()) {
      if (auto err = shardscope::parseCollectorAddress(workerCollector, recording.collectorHost, recording.collectorPort)) {
        return failUsage(*err);
      }
    }
    if (const char* token = std::getenv("SHARDSCOPE_COLLECTOR_TOKEN")) recording.token = token;
    return shardscope::runRankWorker(config, recording);
  }

  if (listen->parsed()) {
    if (const char* token = std::getenv("SHARDSCOPE_COLLECTOR_TOKEN")) listenOptions.token = token;
    if (!listenTokenFile.empty()) {
      std::string error;
      auto text = shardscope::files::readFileText(listenTokenFile, error, 4096);
      if (!text) return failUsage("--token-file: " + error);
      listenOptions.token = text->substr(0, text->find('\n'));
      if (listenOptions.token.empty()) return failUsage("--token-file '" + listenTokenFile + "' starts with an empty line: put the token on its first line");
    }
    if (auto err = shardscope::checkCollectorOptions(listenOptions)) return failUsage(*err);
    shardscope::app::installInterruptHandlers();
    if (!listenWindow && listenWindowChoice.screenshotPath.empty() && listenWindowChoice.setsUpWindow()) {
      return failUsage("--window-size and --window-events set up the window, and listen opens one only with --window "
                       "(or --screenshot FILE): add it, or drop them");
    }
    if (listenWindow || !listenWindowChoice.screenshotPath.empty()) {
      int width = 0, height = 0;
      if (auto err = shardscope::app::parseWindowSize(listenWindowChoice.windowSize, width, height)) return failUsage(*err);
      return shardscope::app::runListenGui(listenOptions, listenWindowChoice);
    }
    return shardscope::runCollector(listenOptions, [] { return shardscope::app::interruptSignal() != 0; });
  }

  if (view->parsed() && !viewSummary.empty()) return shardscope::app::writeJobSummary(viewPaths, viewSummary);
  if (view->parsed()) return shardscope::app::viewFile(viewPaths, viewWindow);

  if (!appLesson.empty() && !app.get_subcommands().empty()) {
    return failUsage("--lesson opens the app on a lesson and goes without a command: 'shardscope --lesson " + appLesson +
                     "', or run it in the terminal with 'shardscope lesson " + appLesson + "'");
  }
  if (appPredict && appLesson.empty()) return failUsage("--predict goes with a lesson: shardscope --lesson NAME --predict");
  if (lesson->parsed() || !appLesson.empty()) {
    if (lesson->parsed() && lessonName.empty()) return shardscope::app::listLessons();
    shardscope::lessons::Lesson chosen;
    if (auto err = shardscope::lessons::loadLesson(lesson->parsed() ? lessonName : appLesson, chosen)) return failUsage(*err);
    const auto& window = lesson->parsed() ? lessonWindow : appWindow;
    if (window.caption < 1 || window.caption > static_cast<int>(chosen.captions.size())) {
      return failUsage("--caption " + std::to_string(window.caption) + " is not a caption of lesson '" + chosen.name +
                       "': it has " + std::to_string(chosen.captions.size()) + ", from 1");
    }
    for (const auto& r : chosen.runs) {
      if (auto err = shardscope::checkDeviceAvailable(r.config)) return failUsage(*err);
    }
    const bool predict = lesson->parsed() ? lessonOptions.predict : appPredict;
    if (!lessonOptions.answers.empty() && !predict) return failUsage("--answers goes with --predict: add it");
    if (predict && chosen.questions.empty()) {
      return failUsage("lesson '" + chosen.name + "' asks no questions to predict; these do: " +
                       shardscope::app::lessonsWithQuestions());
    }
    if (!lessonOptions.answers.empty()) {
      if (auto err = shardscope::app::readAnswers(chosen, lessonOptions)) return failUsage(*err);
    }
    if (lesson->parsed() && lessonWindow.screenshotPath.empty()) {
      if (lessonWindow.setsUpWindow() || lessonWindow.caption != 1) {
        return failUsage("--caption and the window options show the lesson in the window, and 'shardscope lesson' "
                         "opens one only with --screenshot FILE: add it, or open the app: shardscope --lesson " + chosen.name);
      }
      shardscope::app::installInterruptHandlers();
      return shardscope::app::runLessonInTerminal(chosen, lessonOptions, trainWithProgress);
    }
    return shardscope::app::runLessonGui(chosen, selfExecutable(), window, predict, lessonOptions.typed);
  }

  if (estimate->parsed()) {
    shardscope::RunConfig config;
    if (auto err = estimateRunOptions.resolve(config)) return failUsage(*err);
    if (shardscope::app::asksAboutModelStates(estimateOptions) && estimate->count("--world") > 0) {
      if (auto err = shardscope::app::takeWorldAsWorlds(config.world, estimate->count("--worlds") > 0, estimateOptions)) {
        return failUsage(*err);
      }
    }
    return shardscope::app::runEstimate(config, estimateOptions);
  }

  std::vector<shardscope::StrategyKind> compareStrategies;
  std::vector<int> compareWorlds;
  if (compare->parsed()) {
    if (auto err = shardscope::parseStrategyList(compareStrategyList, compareStrategies)) return failUsage(*err);
    if (!compareWorldList.empty()) {
      if (auto err = shardscope::parseWorldList(compareWorldList, compareWorlds)) return failUsage(*err);
    }
  }
  shardscope::RunConfig config;
  if (run->parsed()) {
    if (auto err = runOptions.resolve(config)) return failUsage(*err);
  } else if (compare->parsed()) {
    if (auto err = compareOptions.resolve(config)) return failUsage(*err);
  } else {
    // The desktop app, with a configuration that shows FSDP's gather-and-free cycle clearly.
    config.model = shardscope::ModelKind::Gpt;
    config.layers = 4;
    config.hidden = 256;
    config.seq = 16;
    config.batch = 4;
    config.strategy = shardscope::StrategyKind::FullShard;
    config.world = 2;
    config.steps = 6;
    return shardscope::app::runGui(config, selfExecutable(), /*startImmediately=*/false,
                                   /*compareRuns=*/{}, appWindow);
  }
  // --worlds: every run is checked (a batch must divide by each world size) before any starts.
  const auto runs = shardscope::comparisonRuns(config, compareStrategies, compareWorlds);
  // A compare checks the runs it makes (--shard-group-size goes to its hybrid runs only).
  if (auto err = compare->parsed() ? shardscope::comparisonProblem(runs) : shardscope::validate(config)) {
    return failUsage(*err);
  }
  if (auto err = shardscope::checkDeviceAvailable(config)) return failUsage(*err);
  for (const auto& run : compare->parsed() ? runs : std::vector<shardscope::RunConfig>{config}) {
    if (auto err = shardscope::estimate::checkMemoryAvailable(run)) {
      return failUsage(compare->parsed() ? shardscope::strategyName(run.strategy) + std::string(" at world ") + std::to_string(run.world) + ": " + *err : *err);
    }
  }
  const auto& window = compare->parsed() ? compareWindow : runWindow;
  if (!window.focus.empty()) {
    std::string strategies;
    bool runsIt = false;
    for (const auto& r : compare->parsed() ? runs : std::vector<shardscope::RunConfig>{config}) {
      const std::string name = shardscope::strategyName(r.strategy);
      runsIt |= name == window.focus;
      if (strategies.find(name) == std::string::npos) strategies += (strategies.empty() ? "" : ", ") + name;
    }
    if (!runsIt) {
      return failUsage("--focus '" + window.focus + "' is not a strategy this command runs (" + strategies +
                       "): name one of them, or drop --focus");
    }
  }
  if (config.stepGate != shardscope::StepGateMode::Off && !window.screenshotPath.empty()) {
    return failUsage(std::string("--step-gate ") + modeName(config.stepGate) + " waits for someone to press Step, and --screenshot renders a "
                     "window nobody can press it in: drop --step-gate (then --at picks the moment to show), or "
                     "step through in a terminal (run --step-gate without --screenshot) or in the app.");
  }
  if (compare->parsed()) {
    if (!compareWindow.screenshotPath.empty()) {
      return shardscope::app::runGui(config, selfExecutable(), true, runs, compareWindow);
    }
    shardscope::app::installInterruptHandlers();
    return runCompare(config, runs, !compareWorlds.empty());
  }
  if (!runWindow.screenshotPath.empty()) {
    return shardscope::app::runGui(config, selfExecutable(), true, {}, runWindow);
  }
  shardscope::app::installInterruptHandlers();
  return runHeadless(config);
}
