// What each command does once the command line is parsed (command_line.h).
#include "app/command_line.h"

#include <cstdlib>
#include <filesystem>

#include "app/command_line_parse.h"
#include "app/engine_module.h"
#include "app/interrupt.h"
#include "app/job_summary.h"
#include "app/run_commands.h"
#include "app/schedule_command.h"
#include "engine/recording/collector_link.h"
#include "engine/launch/rank_worker.h"
#include "engine/launch/run_types.h"
#include "estimate/memory_preflight.h"
#include "files/file_text.h"
#include "config/view_tabs.h"

namespace shardscope::app {

std::optional<std::string> CommandLine::windowProblem() const {
  for (const auto* choice : {&runWindow, &compareWindow, &viewWindow}) {
    if (!choice->tab.empty() && !shardscope::app::knownTab(choice->tab)) {
      return ("--tab '" + choice->tab + "' is not a tab: choose one of " + shardscope::config::viewTabNames());
    }
  }
  for (const auto* choice : {&appWindow, &runWindow, &compareWindow, &viewWindow, &lessonWindow, &listenWindowChoice}) {
    int width = 0, height = 0;
    float scale = 1;
    if (auto err = shardscope::app::parseWindowSize(choice->windowSize, width, height)) return *err;
    if (auto err = shardscope::app::parseUiScale(choice->uiScale, scale)) return *err;
    if (auto err = shardscope::app::checkMemoryScale(choice->memoryScale)) return *err;
    size_t events = 0;
    if (auto err = shardscope::app::parseWindowEvents(choice->windowEvents, events)) return *err;
  }
  for (const auto* choice : {&runWindow, &compareWindow}) {  // `view` always opens the window
    if (choice->setsUpWindow() && choice->screenshotPath.empty()) {
      return (
          "--tab, --at, --zoom, --window-size, --focus, --ui-scale, --high-contrast, --stragglers, --memory-scale and "
          "--window-events set up the window, and run/compare open one only with --screenshot FILE: "
          "add it, or drop them "
          "(or open the app: shardscope --ui-scale 1.5)");
    }
  }
  return std::nullopt;
}

int CommandLine::runCommand() {
  if (worker->parsed()) return runWorker();
  if (listen->parsed()) return runListen();
  if (diff->parsed()) return shardscope::app::runDiff(diffChoice);
  if (view->parsed() && !viewSummary.empty()) return shardscope::app::writeJobSummary(viewPaths, viewSummary);
  if (view->parsed() && viewWindow.diffDifference && !viewDiff) {
    return failUsage(
        "--diff-difference draws a diff's B - A: it goes with --diff ('shardscope view --diff A B "
        "--diff-difference')");
  }
  if (view->parsed() && viewDiff) {
    if (viewPaths.size() != 2) {
      return failUsage("view --diff takes two recordings, A (the baseline) then B: 'shardscope view --diff A B'");
    }
    viewWindow.tab = "diff";
  }
  if (view->parsed()) return shardscope::app::viewFile(viewPaths, viewWindow);
  if (!appLesson.empty() && !app.get_subcommands().empty()) {
    return failUsage("--lesson opens the app on a lesson and goes without a command: 'shardscope --lesson " +
                     appLesson + "', or run it in the terminal with 'shardscope lesson " + appLesson + "'");
  }
  if (appPredict && appLesson.empty())
    return failUsage("--predict goes with a lesson: shardscope --lesson NAME --predict");
  if (!appLessonRecordings.empty() && appLesson.empty() && !lesson->parsed()) {
    return failUsage("--from-recordings goes with a lesson: shardscope --lesson NAME --from-recordings DIR");
  }
  if (lesson->parsed() || !appLesson.empty()) return runLesson();
  if (estimate->parsed()) return runEstimateCommand();
  return runOrCompare();
}

int CommandLine::runWorker() {
  shardscope::config::RunConfig config;
  if (auto err = workerOptions.resolve(config)) return failUsage(*err);
  // Under torchrun no controller made --export's directory; every rank may (mkdir -p is idempotent).
  if (auto err = shardscope::config::makeOutputDirectories(config)) return failUsage(workerOptions.located(*err));
  shardscope::engine::WorkerRecording recording;
  recording.traceDir = workerTraceDir;
  recording.clockEverySeconds = workerClockEvery;
  if (!workerCollector.empty()) {
    if (auto err = shardscope::engine::parseCollectorAddress(workerCollector, recording.collectorHost,
                                                             recording.collectorPort)) {
      return failUsage(*err);
    }
  }
  if (const char* token = std::getenv("SHARDSCOPE_COLLECTOR_TOKEN")) recording.token = token;
  return shardscope::app::runRankWorker(config, recording);
}

int CommandLine::runListen() {
  if (const char* token = std::getenv("SHARDSCOPE_COLLECTOR_TOKEN")) listenOptions.token = token;
  if (!listenTokenFile.empty()) {
    std::string error;
    auto text = shardscope::files::readFileText(listenTokenFile, error, 4096);
    if (!text) return failUsage("--token-file: " + error);
    listenOptions.token = text->substr(0, text->find('\n'));
    if (listenOptions.token.empty())
      return failUsage("--token-file '" + listenTokenFile +
                       "' starts with an empty line: put the token on its first line");
  }
  if (auto err = shardscope::engine::checkCollectorOptions(listenOptions)) return failUsage(*err);
  shardscope::app::installInterruptHandlers(shardscope::app::kEndsWithoutTheCollector);
  if (!listenWindow && listenWindowChoice.screenshotPath.empty() && listenWindowChoice.setsUpWindow()) {
    return failUsage(
        "--window-size and --window-events set up the window, and listen opens one only with --window "
        "(or --screenshot FILE): add it, or drop them");
  }
  if (listenWindow || !listenWindowChoice.screenshotPath.empty()) {
    int width = 0, height = 0;
    if (auto err = shardscope::app::parseWindowSize(listenWindowChoice.windowSize, width, height))
      return failUsage(*err);
    return shardscope::app::runListenGui(listenOptions, listenWindowChoice);
  }
  return shardscope::engine::runCollector(listenOptions, [] { return shardscope::app::interruptSignal() != 0; });
}

int CommandLine::runLesson() {
  if (lesson->parsed() && lessonName.empty()) return shardscope::app::listLessons();
  shardscope::lessons::Lesson chosen;
  if (auto err = shardscope::lessons::loadLesson(lesson->parsed() ? lessonName : appLesson, chosen))
    return failUsage(*err);
  const auto& window = lesson->parsed() ? lessonWindow : appWindow;
  if (window.caption < 1 || window.caption > static_cast<int>(chosen.captions.size())) {
    return failUsage("--caption " + std::to_string(window.caption) + " is not a caption of lesson '" + chosen.name +
                     "': it has " + std::to_string(chosen.captions.size()) + ", from 1");
  }
  if (!appLessonRecordings.empty()) {
    if (lesson->parsed() && lessonWindow.screenshotPath.empty()) {
      return failUsage(
          "--from-recordings plays the lesson in the window: add --screenshot FILE, or open the app: "
          "shardscope --lesson " +
          chosen.name + " --from-recordings " + appLessonRecordings);
    }
    const auto missing = shardscope::lessons::missingRecordings(chosen, appLessonRecordings);
    if (!missing.empty()) {
      return failUsage("--from-recordings '" + appLessonRecordings + "' has no '" + missing.front() +
                       "': record the lesson's runs there first with 'shardscope lesson " + chosen.name + " --record " +
                       appLessonRecordings + "'");
    }
  } else if (!shardscope::app::engineBuilt()) {
    return failUsage(
        "this is shardscope-viewer, without the training engine: a lesson plays here from its "
        "recordings, 'shardscope-viewer --lesson " +
        chosen.name + " --from-recordings DIR', recorded by the full build with 'shardscope lesson " + chosen.name +
        " --record DIR'");
  } else {
    for (const auto& r : chosen.runs) {
      if (auto err = shardscope::app::checkDeviceAvailable(r.config)) return failUsage(*err);
    }
  }
  for (const auto* folder : {&lessonOptions.recordDir, &lessonOptions.traceDir}) {
    if (folder->empty()) continue;
    std::error_code made;  // the runs' folder, as --export makes its directory
    std::filesystem::create_directories(*folder, made);
  }
  if (auto err = shardscope::app::lessonOutputsProblem(chosen, lessonOptions)) return failUsage(*err);
  const bool predict = lesson->parsed() ? lessonOptions.predict : appPredict;
  if (!lessonOptions.answers.empty() && !predict) return failUsage("--answers goes with --predict: add it");
  if (predict && chosen.questions.empty()) {
    return failUsage("lesson '" + chosen.name +
                     "' asks no questions to predict; these do: " + shardscope::app::lessonsWithQuestions());
  }
  if (!lessonOptions.answers.empty()) {
    if (auto err = shardscope::app::readAnswers(chosen, lessonOptions)) return failUsage(*err);
  }
  if (lesson->parsed() && lessonWindow.screenshotPath.empty()) {
    if (lessonWindow.setsUpWindow() || lessonWindow.caption != 1) {
      return failUsage(
          "--caption and the window options show the lesson in the window, and 'shardscope lesson' "
          "opens one only with --screenshot FILE: add it, or open the app: shardscope --lesson " +
          chosen.name);
    }
    shardscope::app::installInterruptHandlers();
    return shardscope::app::runLessonInTerminal(chosen, lessonOptions, trainWithProgress);
  }
  return shardscope::app::runLessonGui(chosen, selfExecutable(), window, predict, lessonOptions.typed,
                                       appLessonRecordings);
}

int CommandLine::runEstimateCommand() {
  shardscope::config::RunConfig config;
  if (auto err = estimateRunOptions.resolve(config)) return failUsage(*err);
  if (shardscope::app::asksAboutModelStates(estimateOptions) && estimate->count("--world") > 0) {
    if (auto err = shardscope::app::takeWorldAsWorlds(config.world, estimate->count("--worlds") > 0, estimateOptions)) {
      return failUsage(*err);
    }
  }
  return shardscope::app::runEstimate(config, estimateOptions,
                                      [this](const std::string& e) { return estimateRunOptions.located(e); });
}

std::optional<std::string> CommandLine::parseComparedLists(
    const shardscope::config::RunConfig& config, std::vector<shardscope::config::StrategyKind>& strategies,
    std::vector<int>& worlds, std::vector<shardscope::config::PipelineSchedule>& schedules) const {
  if (auto err = shardscope::config::parseStrategyList(compareStrategyList, strategies)) return err;
  if (!compareWorldList.empty()) {
    if (auto err = shardscope::config::parseWorldList(compareWorldList, worlds)) return err;
  }
  if (compare->count("--schedules") == 0) return std::nullopt;
  if (auto err = shardscope::config::parseModeList(compareScheduleList, "--schedules", "schedule", schedules)) {
    return err;
  }
  if (config.pp < 2) {
    return "--schedules compares pipeline schedules, and this run has no pipeline: add --pp P (2 or more, "
           "dividing --world), e.g. --world 2 --pp 2.";
  }
  // The schedules under one strategy: --strategy's, unless --strategies names several.
  if (compare->count("--strategies") == 0) strategies = {config.strategy};
  return std::nullopt;
}

int CommandLine::runOrCompare() {
  std::vector<shardscope::config::StrategyKind> compareStrategies;
  std::vector<int> compareWorlds;
  std::vector<shardscope::config::PipelineSchedule> compareSchedules;
  shardscope::config::RunConfig config;
  if (run->parsed()) {
    if (auto err = runOptions.resolve(config)) return failUsage(*err);
  } else if (compare->parsed()) {
    if (auto err = compareOptions.resolve(config)) return failUsage(*err);
    if (auto err = parseComparedLists(config, compareStrategies, compareWorlds, compareSchedules)) {
      return failUsage(*err);
    }
  } else {
    // The desktop app, with a configuration that shows FSDP's gather-and-free cycle clearly.
    config.model = shardscope::config::ModelKind::Gpt;
    config.layers = 4;
    config.hidden = 256;
    config.seq = 16;
    config.batch = 4;
    config.strategy = shardscope::config::StrategyKind::FullShard;
    config.world = 2;
    config.steps = 6;
    return shardscope::app::runGui(config, selfExecutable(), /*startImmediately=*/false,
                                   /*compareRuns=*/{}, appWindow);
  }
  // From here on a value a --config file gave is named with the file and its key.
  const auto fail = [&](const std::string& error) {
    return failUsage((compare->parsed() ? compareOptions : runOptions).located(error));
  };
  // --worlds: every run is checked (a batch must divide by each world size) before any starts.
  const auto runs = shardscope::config::comparisonRuns(config, compareStrategies, compareWorlds, compareSchedules);
  // A compare checks the runs it makes (--shard-group-size goes to its hybrid runs only).
  if (auto err =
          compare->parsed() ? shardscope::config::comparisonProblem(runs) : shardscope::config::validate(config)) {
    return fail(*err);
  }
  if (printSchedule) return printPipelineSchedule(config);
  // The file checks, once: every run starts with them too (the window's runs meet them there).
  if (auto err = shardscope::config::outputsProblem(config)) return fail(*err);
  if (auto err = shardscope::app::checkDeviceAvailable(config)) return fail(*err);
  for (const auto& run : compare->parsed() ? runs : std::vector<shardscope::config::RunConfig>{config}) {
    if (auto err = shardscope::estimate::checkMemoryAvailable(run)) {
      return fail(compare->parsed() ? shardscope::config::strategyName(run.strategy) + std::string(" at world ") +
                                          std::to_string(run.world) + ": " + *err
                                    : *err);
    }
  }
  const auto& window = compare->parsed() ? compareWindow : runWindow;
  if (!window.focus.empty()) {
    std::string strategies;
    bool runsIt = false;
    for (const auto& r : compare->parsed() ? runs : std::vector<shardscope::config::RunConfig>{config}) {
      const std::string name = shardscope::config::strategyName(r.strategy);
      runsIt |= name == window.focus;
      if (strategies.find(name) == std::string::npos) strategies += (strategies.empty() ? "" : ", ") + name;
    }
    if (!runsIt) {
      return failUsage("--focus '" + window.focus + "' is not a strategy this command runs (" + strategies +
                       "): name one of them, or drop --focus");
    }
  }
  if (config.stepGate != shardscope::config::StepGateMode::Off && !window.screenshotPath.empty()) {
    return fail(std::string("--step-gate ") + config::modeName(config.stepGate) +
                " waits for someone to press Step, and --screenshot renders a "
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

}  // namespace shardscope::app
