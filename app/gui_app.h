// The desktop app: the window with a live engine behind it (`shardscope`, `run --screenshot`) or a
// saved trace (`shardscope view FILE`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lessons/lesson.h"
#include "config/run_config.h"
#include "engine/recording/event_collector.h"

namespace shardscope::app {

struct WindowChoice {
  std::string screenshotPath;            // hidden window; the PNG is written when there is nothing left to wait for
  std::string tab;                       // tab below the timelines to show first (bottomTabTitle's names)
  std::string at;                        // where to put the playhead: a time or an event group (playhead.h)
  std::string zoom;                      // the timelines' visible window: FROM..TO, each as `at` (playhead.h)
  std::string windowSize = "1600x1000";  // WIDTHxHEIGHT of the window (and so of the PNG)
  // Projector mode (ui/projector_mode.h).
  std::string uiScale = "1";  // text and sizes, 0.75 to 3
  bool highContrast = false;
  bool stragglers = false;                // the stragglers view (W)
  std::string memoryScale = "shared";     // shared | own: each session's memory lanes to its own peak
  std::string focus;                      // a strategy: that session alone, full screen
  bool diffDifference = false;            // view --diff: B's memory lanes give B - A (D), not A's outline
  int caption = 1;                        // a lesson's caption to open at, from 1
  std::string windowEvents = "24000000";  // the most events the runs in the window hold in detail
  // Whether any option that only a window uses differs from its default (run and compare open a
  // window only with --screenshot).
  bool setsUpWindow() const;
};

// "1.5" (or "1.5x") into a scale from 0.75 to 3; an error naming the value, the range and an example.
std::optional<std::string> parseUiScale(const std::string& text, float& scale);

// --memory-scale: "shared" or "own"; an error naming the value and the choices otherwise.
std::optional<std::string> checkMemoryScale(const std::string& text);

// --window-events: a whole number of events from 10,000 to 1,000,000,000 (k and M allowed: 24M).
std::optional<std::string> parseWindowEvents(const std::string& text, size_t& events);

// "1920x1080" into width and height; an error naming the value and the allowed range otherwise.
std::optional<std::string> parseWindowSize(const std::string& text, int& width, int& height);

// Opens the window with `config` in the configuration panel. With `startImmediately`, the run
// starts at once, or a compare of `compareRuns` when there are any (comparisonRuns); with a
// screenshot path, the window is hidden, and the PNG is written when the runs have ended.
int runGui(const config::RunConfig& config, const std::string& workerExecutable, bool startImmediately,
           const std::vector<config::RunConfig>& compareRuns, const WindowChoice& choice);

// Opens the window on a lesson: its runs start at once, its caption `choice.caption` is shown; with
// a screenshot path the PNG is written when the runs have ended and the caption's moment is placed.
// Predicting, the questions come first; `answers` (as typed, one per question) fill them in and
// lock them, so that the runs start at once (for a screenshot of the scores).
// `fromRecordings`: play the lesson from the recordings `lesson NAME --record DIR` wrote there
// instead of running it (app/lesson_replay.h).
int runLessonGui(const lessons::Lesson& lesson, const std::string& workerExecutable, const WindowChoice& choice,
                 bool predict = false, const std::vector<std::string>& answers = {},
                 const std::string& fromRecordings = "");

// `shardscope listen --window`: the collector on a thread, the window drawing the job it collects
// live; with a screenshot path, the PNG is written once every rank has gone. The collector's exit
// status (0: every rank finished).
int runListenGui(const engine::CollectorOptions& options, const WindowChoice& choice);

// Whether `name` names a tab below the timelines (see WindowChoice::tab).
bool knownTab(const std::string& name);

// Opens a saved record for browsing (ui/record_files.h: one file or directory, or a PyTorch job's
// per-rank traces); with a screenshot path, writes the PNG and exits. 3 once the window closes when
// a record says its run's recording was incomplete.
int viewFile(const std::vector<std::string>& paths, const WindowChoice& choice);

}  // namespace shardscope::app
