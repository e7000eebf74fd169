// The command line's commands and options, bound to CommandLine's members (command_line.h).
#include "app/command_line.h"

#include "config/strategies.h"
#include "config/view_tabs.h"

namespace shardscope::app {

CommandLine::CommandLine()
    : app("shardscope: run real DDP and FSDP training across rank processes and see what each rank\n"
          "holds in memory and sends over the wire.") {
  app.require_subcommand(0, 1);
  app.footer(
      "Run 'shardscope COMMAND --help' for the options of a command.\n"
      "With no command, shardscope opens the desktop app (needs a display).");
  addRun();
  addCompare();
  addEstimate();
  addView();
  addLesson();
  addWorker();
  addListen();
  addDiff();
  addWindowOptions();
}

void CommandLine::addDiff() {
  diff = app.add_subcommand("diff",
                            "why is B worse than A: two recordings aligned by step and rank, what changed in memory, "
                            "communication and time, the largest changes first, and a verdict (exit 0: no change or "
                            "better, 1: regression, 2: bad input)");
  addDiffOptions(*diff, diffChoice);
}

void CommandLine::addRun() {
  run = app.add_subcommand("run", "train headlessly, one OS process per rank");
  runOptions.addTo(*run);
  run->add_option("--screenshot", runWindow.screenshotPath,
                  "render the app headlessly (a hidden window; use xvfb-run without a display), "
                  "run, and write a PNG of the window to FILE when the run has ended");
  run->add_flag("--print-schedule", printSchedule,
                "with --pp: print each pipeline rank's actions in the order it runs them, as "
                "torch.distributed.pipelining writes them (1F3: stage 1's forward of micro-batch 3; "
                "0SEND_F2, 1RECV_B0: transfers), the split of the blocks and the bubble's closed form, "
                "then exit without training");
}

void CommandLine::addCompare() {
  compare = app.add_subcommand(
      "compare",
      "run several strategies (ddp, full_shard and shard_grad_op unless --strategies "
      "says otherwise) one after another on the same model and data, and print them "
      "side by side (--strategy is ignored unless --schedules is given; --trace, --memory-csv and --export get one "
      "file or directory per strategy)");
  compareOptions.addTo(*compare);
  for (auto s : shardscope::config::defaultCompareStrategies()) {
    compareStrategyList += (compareStrategyList.empty() ? "" : ",") + std::string(shardscope::config::strategyName(s));
  }
  compare->add_option("--worlds", compareWorldList,
                      "run each strategy at each of these world sizes (e.g. 1,2,4,8) on the same global "
                      "--batch, and show per-rank peak memory by role against N, measured, beside the "
                      "estimator's prediction of the model states [default: --world alone]");
  compare->add_option("--strategies", compareStrategyList,
                      "the strategies to run, in order, e.g. ddp,zero1,shard_grad_op,full_shard for "
                      "ZeRO stages 0 to 3 [default: ddp,full_shard,shard_grad_op]");
  compare->add_option("--schedules", compareScheduleList,
                      "with --pp: run each pipeline schedule (e.g. gpipe,1f1b,interleaved_1f1b,zero_bubble) on "
                      "the same model, data and micro-batches, under --strategy's strategy (or each of "
                      "--strategies), and compare their step time, bubble (measured, planned, closed form), "
                      "activations and bytes sent between stages");
  compare->add_option("--screenshot", compareWindow.screenshotPath,
                      "render the app headlessly, compare, and write a PNG of the window to FILE");
}

void CommandLine::addEstimate() {
  estimate = app.add_subcommand("estimate",
                                "predict, without running, what each rank holds and sends per step for the run "
                                "options (every strategy), or with --params whether a model of that size "
                                "fits on so many GPUs; closed forms, labelled as predictions (docs/estimate.md)");
  estimateRunOptions.addTo(*estimate, /*withOutputs=*/false);
  shardscope::app::addEstimateOptions(*estimate, estimateOptions);
}

void CommandLine::addView() {
  view = app.add_subcommand("view", "browse a saved trace or summary in the window, without running anything");
  view->add_option(
          "FILE", viewPaths,
          "a trace (--trace FILE.pftrace or FILE.json) or a summary (--summary FILE) of run or compare; a "
          "job's --trace-dir; a PyTorch job's torch.profiler traces: their directory (with the CUDA "
          "memory snapshots rank-R.memory.pickle beside them read as the GPU ranks' memory), or its "
          "per-rank files, named any way (each told by its content); CUDA memory snapshots on their own, memory only "
          "(docs/profiler.md); PyTorch's Flight Recorder dumps (DIR/fr-RANK, pickle or JSON): each rank's last "
          "collectives side by side, the first mismatch named; several recordings open side by side (e.g. a run's "
          "--trace beside a "
          "PyTorch job's directory)")
      ->required();
  view->add_flag("--diff", viewDiff,
                 "two recordings, A then B, side by side with the Diff tab in front: B against A, the largest "
                 "changes first (click one: the playhead there) and a verdict (the terminal's: shardscope diff A B)");
  view->add_flag("--diff-difference", viewWindow.diffDifference,
                 "with --diff: B's memory lanes give B - A (up: B holds more), not A's total as an outline over "
                 "B's (D in the app)");
  view->add_option("--screenshot", viewWindow.screenshotPath,
                   "render headlessly and write a PNG of the window to FILE, then exit");
  view->add_option(
      "--summary", viewSummary,
      "for a job's --trace-dir DIR, its torch.profiler traces or CUDA memory snapshots, or a run's --trace "
      "(.pftrace or .json): write its summary JSON (as run --summary, with each rank's clock against rank "
      "0's) to FILE instead of opening the window; for Flight Recorder dumps, each rank's last collective and "
      "the first mismatch (flight_recorder.first_mismatch)");
}

void CommandLine::addLesson() {
  lesson = app.add_subcommand(
      "lesson",
      "list the lessons, or run one here: its runs, its captions, and its claims checked on what the runs "
      "measured (exit 1 if one does not hold); 'shardscope --lesson NAME' opens it in the app");
  lesson->add_option("NAME", lessonName, "a lesson (assets/lessons/NAME.json) or a lesson file; none: list them");
  lesson->add_option("--trace-dir", lessonOptions.traceDir,
                     "write each run's trace there, as LABEL.json (Perfetto, shardscope view; the folder is created)");
  lesson
      ->add_option("--record", lessonOptions.recordDir,
                   "write each run's recording into DIR as LABEL.pftrace (compact), the claims checked on them: "
                   "what 'shardscope --lesson NAME --from-recordings DIR' and the browser's page replay")
      ->excludes("--trace-dir");
  lesson->add_flag(
      "--predict", lessonOptions.predict,
      "predict first (interview practice): answer the lesson's questions before its runs, scored after them");
  lesson->add_option("--answers", lessonOptions.answers,
                     "with --predict: the answers, ';' between them (e.g. '30 MiB;ddp,full_shard'), instead of asking");
  lesson->add_option(
      "--screenshot", lessonWindow.screenshotPath,
      "open the lesson in a hidden window instead, run it, and write a PNG of caption --caption to FILE");
  lesson->add_option("--caption", lessonWindow.caption, "with --screenshot: the caption to show, from 1 [default: 1]");
  lesson->add_option("--window-size", lessonWindow.windowSize,
                     "with --screenshot: the window's WIDTHxHEIGHT [default: 1600x1000]");
}

void CommandLine::addWorker() {
  worker =
      app.add_subcommand("worker",
                         "run one rank; reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT "
                         "(as set by torchrun)");
  workerOptions.addTo(*worker);
  worker->add_option("--trace-dir", workerTraceDir,
                     "record this rank into DIR/rank-R.events (rank 0 also writes DIR/config.json), for "
                     "'shardscope view DIR' to merge the job's ranks afterwards; DIR is created, and shared "
                     "or gathered from every host");
  worker
      ->add_option("--clock-every", workerClockEvery,
                   "with --trace-dir or --collector: measure each rank's clock against rank 0's again every "
                   "SECONDS between steps (besides at the start and the end), to follow a drifting host; 0: "
                   "start and end only [default: 60]")
      ->check(CLI::Range(0.0, 86400.0 * 365));
  worker->add_option("--collector", workerCollector,
                     "stream this rank's events, live, to 'shardscope listen' at HOST:PORT (presenting "
                     "SHARDSCOPE_COLLECTOR_TOKEN when set); with --trace-dir too, a rank that cannot reach it, or "
                     "loses it, writes its file instead");
}

void CommandLine::addListen() {
  listen = app.add_subcommand(
      "listen",
      "collect a job's events as its ranks stream them ('shardscope worker --collector HOST:PORT' under "
      "torchrun or srun): one file per rank in --trace-dir DIR for 'shardscope view DIR', progress here");
  listen->add_option("--port", listenOptions.port, "the port to listen on [default: 29700]");
  listen->add_option("--bind", listenOptions.bindAddress,
                     "the address to listen on; anything but loopback needs a token [default: 127.0.0.1]");
  listen->add_option("--trace-dir", listenOptions.dir, "where each rank's events go (created)")->required();
  listen->add_flag("--window", listenWindow, "draw the job in the app's window as its ranks stream (Listen mode)");
  listen->add_option("--screenshot", listenWindowChoice.screenshotPath,
                     "with the window hidden: write a PNG of it to FILE once every rank has gone");
  listen->add_option("--window-size", listenWindowChoice.windowSize,
                     "with the window: WIDTHxHEIGHT [default: 1600x1000]");
  listen->add_option("--token-file", listenTokenFile,
                     "a file whose first line every rank must present (as SHARDSCOPE_COLLECTOR_TOKEN); default: "
                     "SHARDSCOPE_COLLECTOR_TOKEN from the environment");
}

void CommandLine::addWindowOptions() {
  std::string tabHelp = "with --screenshot: the tab below the timelines to show:";
  for (const auto& tab : shardscope::config::viewTabs()) {
    tabHelp += std::string(tab.name == shardscope::config::viewTabs().front().name ? " " : " | ") + tab.name + " (" +
               tab.shows + ")";
  }
  tabHelp += " [default: " + std::string(shardscope::config::viewTabs().front().name) + "]";
  for (auto [command, choice] :
       {std::pair{run, &runWindow}, std::pair{compare, &compareWindow}, std::pair{view, &viewWindow}}) {
    command->add_option("--tab", choice->tab, tabHelp);
    command->add_option("--at", choice->at,
                        "with the window: put the playhead at a time (12.5ms, 800us, 1.2s) or at an event group "
                        "by its label, in step S with @S (e.g. 'backward blocks.1@1'); for a run, once it has ended");
    command->add_option("--zoom", choice->zoom,
                        "with the window: show only FROM..TO of the timelines, each a time or an event group as --at "
                        "takes it (e.g. 9.2s..12s, or 'step start@1..optimizer step@3'); the wheel zooms from there");
    command->add_option("--window-size", choice->windowSize,
                        "the window's WIDTHxHEIGHT, e.g. 1920x1080 [default: 1600x1000]");
    command->add_option("--focus", choice->focus,
                        "with the window: show only this strategy's session, full screen (F in the app)");
  }
  // Projector mode, for the app itself as for a screenshot.
  app.add_flag("--predict", appPredict,
               "with --lesson: predict first (interview practice): the lesson's questions "
               "before its runs, scored after them");
  app.add_option("--lesson", appLesson,
                 "open the app on a lesson: its runs start, its captions lead through them "
                 "(N / P); 'shardscope lesson' lists the lessons");
  for (auto* command : {&app, lesson}) {
    command->add_option("--from-recordings", appLessonRecordings,
                        "with --lesson (or lesson NAME --screenshot FILE): play it from the recordings 'shardscope "
                        "lesson NAME --record DIR' wrote in DIR, instead of running it (the runs a teacher showed)");
  }
  for (auto [command, choice] :
       {std::pair{&app, &appWindow}, std::pair{run, &runWindow}, std::pair{compare, &compareWindow},
        std::pair{view, &viewWindow}, std::pair{lesson, &lessonWindow}}) {
    command->add_option("--ui-scale", choice->uiScale,
                        "with the window: text and sizes x SCALE, 0.75 to 3 (1.5 for a projector; Ctrl +/- in "
                        "the app) [default: 1]");
    command->add_flag("--high-contrast", choice->highContrast,
                      "with the window: black background, white text, brighter colours (H in the app)");
    command->add_flag("--stragglers", choice->stragglers,
                      "with the window: the stragglers view, each collective's last rank marked red and the "
                      "others' wait for it hatched (W in the app)");
    command->add_option("--memory-scale", choice->memoryScale,
                        "with the window: shared (every session's memory lanes on one scale) or own (each to its "
                        "own peak; S in the app) [default: shared]");
  }
  for (auto [command, choice] :
       {std::pair{&app, &appWindow}, std::pair{run, &runWindow}, std::pair{compare, &compareWindow},
        std::pair{view, &viewWindow}, std::pair{lesson, &lessonWindow}, std::pair{listen, &listenWindowChoice}}) {
    command->add_option("--window-events", choice->windowEvents,
                        "with the window: the most events its runs (or a run's trace it opens) hold in detail, over "
                        "their ranks (about 30 to 40 MB a million; a compare's runs share them); a longer run folds "
                        "its oldest steps: the figures still count them, the timeline shows the newer ones, and "
                        "--trace keeps them all on disk [default: 24M]");
  }
}

}  // namespace shardscope::app
