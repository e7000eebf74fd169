// shardscope's command line: every command and option, bound to the members here, and what each
// command does once parsed (commands.cpp). main.cpp parses it and hands it to the command given.
//   run      train headlessly: one process per rank, progress per step, tables at the end
//   compare  the same run under several strategies (--strategies), one table side by side
//   estimate predict what each rank holds and sends (closed forms, labelled as predictions)
//   view     browse a saved trace or summary in the window
//   lesson   list the lessons, or run one in the terminal
//   worker   one rank (started by `run`, or by torchrun/srun/mpirun with their variables)
//   listen   collect a launched job's events as its ranks stream them
// With no command, the desktop app opens.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli_options.h"
#include "app/diff_command.h"
#include "app/estimate_command.h"
#include "app/gui_app.h"
#include "app/lesson_command.h"
#include "engine/recording/event_collector.h"

namespace shardscope::app {

class CommandLine {
 public:
  CommandLine();                             // every command and option, bound to the members below
  CommandLine(const CommandLine&) = delete;  // the options point at the members
  CommandLine& operator=(const CommandLine&) = delete;

  // After parsing: a usage error in the window options, or nothing.
  std::optional<std::string> windowProblem() const;
  // The command given, run; its exit status.
  int runCommand();

  CLI::App app;

 private:
  void addRun();
  void addCompare();
  void addEstimate();
  void addView();
  void addLesson();
  void addWorker();
  void addListen();
  void addDiff();
  void addWindowOptions();

  int runWorker();
  int runListen();
  int runLesson();
  int runEstimateCommand();
  int runOrCompare();
  // compare's --strategies, --worlds and --schedules, each checked (--schedules needs --pp).
  std::optional<std::string> parseComparedLists(
      const config::RunConfig& config, std::vector<config::StrategyKind>& strategies, std::vector<int>& worlds,
      std::vector<config::PipelineSchedule>& schedules) const;  // run, compare, or the desktop app

  CLI::App* run = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* estimate = nullptr;
  CLI::App* view = nullptr;
  CLI::App* lesson = nullptr;
  CLI::App* worker = nullptr;
  CLI::App* listen = nullptr;
  CLI::App* diff = nullptr;

  RunOptions runOptions;
  WindowChoice runWindow;
  bool printSchedule = false;  // run --print-schedule
  RunOptions compareOptions;
  std::string compareStrategyList;  // the default list, set by addCompare
  std::string compareWorldList;
  std::string compareScheduleList;
  WindowChoice compareWindow;
  RunOptions estimateRunOptions;
  EstimateOptions estimateOptions;
  std::vector<std::string> viewPaths;
  WindowChoice viewWindow;
  std::string viewSummary;
  bool viewDiff = false;  // view --diff A B
  std::string lessonName;
  LessonOptions lessonOptions;
  WindowChoice lessonWindow;
  DiffChoice diffChoice;
  RunOptions workerOptions;
  std::string workerTraceDir;
  double workerClockEvery = 60;  // seconds
  std::string workerCollector;
  engine::CollectorOptions listenOptions;
  std::string listenTokenFile;
  bool listenWindow = false;
  WindowChoice listenWindowChoice;
  WindowChoice appWindow;
  std::string appLesson;
  std::string appLessonRecordings;  // --from-recordings DIR
  bool appPredict = false;
};

}  // namespace shardscope::app
