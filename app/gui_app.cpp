#include "app/gui_app.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <cstdio>
#include <cstdlib>

#include "app/engine_control.h"
#include "app/interrupt.h"
#include "app/job_summary.h"
#include "app/lesson_replay.h"
#include "app/live_job.h"
#include "app/reading_notice.h"
#include "stats/summary_reader.h"
#include "import/profiler_trace.h"
#include "trace/rank_event_files.h"
#include "trace/trace_reader.h"
#include "ui/app_window.h"
#include "ui/lesson_view.h"
#include "ui/platform_window.h"
#include "ui/record_files.h"

namespace shardscope::app {

// Opens the window over sessions that are already complete (a saved trace or summary).
static int showStore(ui::SessionStore& store, ui::AppState& state, const std::string& path, const WindowChoice& choice);

// The window for `choice`: its size (checked before), and where the playhead goes once ready.
static ui::WindowOptions windowFor(const WindowChoice& choice, ui::AppState& state) {
  ui::WindowOptions options;
  (void)parseWindowSize(choice.windowSize, options.width, options.height);
  options.screenshotPath = choice.screenshotPath;
  options.captureRequest = &state.pngRequest;
  options.captureResult = &state.exportMessage;
  options.droppedPaths = &state.droppedPaths;
  options.look = &state.display.look;
  state.pendingAt = choice.at;
  state.pendingZoom = choice.zoom;
  (void)parseUiScale(choice.uiScale, state.display.look.scale);  // checked before
  state.display.look.highContrast = choice.highContrast;
  state.display.stragglers = choice.stragglers;
  state.display.diffDifference = choice.diffDifference;
  if (choice.tab == "diff") {  // view --diff A B: --at and --zoom are B's, and --at selects the changes there
    state.playhead.session = 1;
    state.diff.selectedAt = choice.at;
  }
  state.display.ownMemoryScale = choice.memoryScale == "own";
  return options;
}

// --window-events, checked before.
static size_t sessionDetailEvents(const WindowChoice& choice) {
  size_t events = kDefaultSessionDetailEvents;
  (void)parseWindowEvents(choice.windowEvents, events);
  return events;
}

// --focus: the first session that runs that strategy (checked against the runs before).
static int focusIndex(const std::vector<config::RunConfig>& runs, const std::string& strategy) {
  for (size_t i = 0; i < runs.size(); ++i) {
    if (config::strategyName(runs[i].strategy) == strategy) return static_cast<int>(i);
  }
  return -1;
}

// --at that named nothing in the run: said after the window closes, as a usage error.
static int reportAtError(const ui::AppState& state, int rc) {
  if (state.atError.empty()) return rc;
  std::fprintf(stderr, "shardscope: error: %s\n", state.atError.c_str());
  return rc == 0 ? 2 : rc;
}

// The window closed while a recording was being read (a trace of gigabytes takes minutes): the
// read writes nothing, so the process ends now rather than wait for it in the controller's
// destructor.
static void endIfStillReading(const EngineSessionControl& engine, int rc) {
  if (!engine.readingRecord()) return;
  std::fprintf(stderr, "shardscope: the window closed while %s was being read; stopped (nothing was being written)\n",
               engine.openStatus().what.c_str());
  std::fflush(nullptr);
  std::_Exit(rc);
}

// The window over a live engine until it closes. A run that failed is said on the terminal; with a
// screenshot it is also the exit status.
// `control`: what the window's actions go through, where not the engine itself (a lesson's replay).
static int runEngineWindow(ui::SessionStore& store, EngineSessionControl& engine, ui::AppState& state,
                           const ui::WindowOptions& options, const std::string& screenshotPath,
                           ui::EngineControl* control = nullptr) {
  std::string error;
  const int rc = ui::runWindow(
      options, [&] { ui::drawAppFrame(state, store, control ? control : &engine); }, error);
  endIfStillReading(engine, rc);
  if (rc != 0) {
    std::fprintf(stderr, "shardscope: %s\n", error.c_str());
    engine.stop();
    return rc;
  }
  if (!state.atError.empty()) return reportAtError(state, 0);
  auto lock = store.lock();
  for (const auto& s : store.sessions()) {
    if (s.status == ui::SessionStatus::Failed) {
      std::fprintf(stderr, "shardscope: %s: %s\n", s.title.c_str(), s.error.c_str());
      return screenshotPath.empty() ? 0 : 1;
    }
  }
  return 0;
}

int runGui(const config::RunConfig& config, const std::string& workerExecutable, bool startImmediately,
           const std::vector<config::RunConfig>& compareRuns, const WindowChoice& choice) {
  const std::string& screenshotPath = choice.screenshotPath;
  ui::SessionStore store;
  EngineSessionControl engine(store, workerExecutable, sessionDetailEvents(choice));
  ui::AppState state;
  state.config = config;
  if (const char* title = ui::bottomTabTitle(choice.tab)) state.openTab = title;
  if (!compareRuns.empty()) {  // the panel shows what the command line asked Compare to run
    auto& chosen = state.compare.strategies;
    chosen.clear();
    std::string worlds;  // the first strategy's world sizes, which every strategy shares
    for (const auto& run : compareRuns) {
      if (std::find(chosen.begin(), chosen.end(), run.strategy) == chosen.end()) chosen.push_back(run.strategy);
      if (run.strategy == compareRuns.front().strategy)
        worlds += (worlds.empty() ? "" : ",") + std::to_string(run.world);
    }
    if (compareRuns.size() > chosen.size()) {
      std::snprintf(state.compare.worlds, sizeof state.compare.worlds, "%s", worlds.c_str());
    }
  }
  if (startImmediately) {
    if (!compareRuns.empty())
      engine.startCompare(compareRuns);
    else
      engine.startRun(config);
  }
  ui::WindowOptions options = windowFor(choice, state);
  if (!choice.focus.empty())
    state.pendingFocus =
        focusIndex(compareRuns.empty() ? std::vector<config::RunConfig>{config} : compareRuns, choice.focus);
  options.readyToCapture = [&] {
    return !engine.busy() && state.pendingAt.empty() && state.pendingZoom.empty() && state.pendingFocus < 0;
  };
  return runEngineWindow(store, engine, state, options, screenshotPath);
}

int runLessonGui(const lessons::Lesson& lesson, const std::string& workerExecutable, const WindowChoice& choice,
                 bool predict, const std::vector<std::string>& answers, const std::string& fromRecordings) {
  ui::SessionStore store;
  EngineSessionControl engine(store, workerExecutable, sessionDetailEvents(choice));
  LessonReplayControl replay(engine, store, {lesson}, [&](const std::string&) { return fromRecordings; });
  ui::EngineControl& control = fromRecordings.empty() ? static_cast<ui::EngineControl&>(engine) : replay;
  ui::AppState state;
  ui::startLesson(state, &control, lesson, predict);
  if (predict && !answers.empty()) {
    state.lesson.typed = answers;
    (void)ui::lockInAnswers(state, &control);  // read before (readAnswers)
  }
  state.lesson.caption = choice.caption - 1;
  ui::WindowOptions options = windowFor(choice, state);
  // Ready once the runs have ended and the caption's tab and playhead have been applied; predicting
  // without answers, at once (the picture is of the questions).
  options.readyToCapture = [&] {
    if (state.lesson.predictFirst && !state.lesson.locked) return true;
    return !engine.busy() && state.lesson.appliedCaption == state.lesson.caption && state.pendingAt.empty() &&
           state.lesson.checked;
  };
  return runEngineWindow(store, engine, state, options, choice.screenshotPath, &control);
}

bool knownTab(const std::string& name) { return ui::bottomTabTitle(name) != nullptr; }

int viewFile(const std::vector<std::string>& paths, const WindowChoice& choice) {
  ui::OpenedRecord record = [&] {
    ReadingNotice notice("shardscope view", paths);
    return ui::openRecord(paths, sessionDetailEvents(choice));
  }();
  if (!record.error.empty()) {  // a usage error, said as every other command says one
    std::fprintf(stderr, "shardscope: error: %s\n", record.error.c_str());
    return 2;
  }
  printTerminalNotes(record.notes);
  ui::SessionStore store;
  ui::AppState state;
  // Flight Recorder dumps have no timeline: their tab is what there is to see.
  const bool dumps = std::any_of(record.sessions.begin(), record.sessions.end(),
                                 [](const ui::Session& s) { return s.collectiveLogs != nullptr; });
  if (const char* title = ui::bottomTabTitle(choice.tab.empty() && dumps ? "collectives" : choice.tab)) {
    state.openTab = title;
  }
  {
    auto lock = store.lock();  // released before the window reads the store
    for (auto& s : record.sessions) store.add(std::move(s));
  }
  if (record.ownConfig) state.config = record.config;  // else the panels keep shardscope's own defaults
  std::string banner = paths.front();
  if (paths.size() > 1) banner += " and " + std::to_string(paths.size() - 1) + " more";
  const int rc = showStore(store, state, banner, choice);
  // A record of a run whose recording lost events or steps (said above): exit 3, as run's.
  return rc == 0 && record.incomplete ? 3 : rc;
}

int runListenGui(const engine::CollectorOptions& options, const WindowChoice& choice) {
  ui::SessionStore store;
  ui::AppState state;
  if (const char* title = ui::bottomTabTitle(choice.tab)) state.openTab = title;
  const std::string where = options.bindAddress + ":" + std::to_string(options.port);
  LiveJobSink sink(store, where, sessionDetailEvents(choice), options.dir);
  std::atomic<bool> collected{false}, windowClosed{false};
  int collectorExit = 0;
  std::thread collector([&] {
    collectorExit = engine::runCollector(
        options, [&] { return windowClosed.load() || interruptSignal() != 0; }, &sink);
    sink.finish(collectorExit);
    collected = true;
  });
  state.viewOnly = true;
  state.banner = "a launched job, collected on " + where + " into " + options.dir;
  state.viewNote = "(live: ranks appear as they stream to the collector)";
  ui::WindowOptions window = windowFor(choice, state);
  window.readyToCapture = [&] { return collected.load(); };  // a screenshot once every rank is done
  std::string error;
  const int rc = ui::runWindow(
      window, [&] { ui::drawAppFrame(state, store, nullptr); }, error);
  windowClosed = true;  // the collector stops with the window, keeping what arrived
  collector.join();
  if (rc != 0) {
    std::fprintf(stderr, "shardscope: %s\n", error.c_str());
    return rc;
  }
  return collectorExit;
}

static int showStore(ui::SessionStore& store, ui::AppState& state, const std::string& path,
                     const WindowChoice& choice) {
  // Runs nothing (no worker): the sidebar's Open reads another recording in place of this one.
  EngineSessionControl control(store, "");
  state.viewOnly = true;
  state.banner = path;
  ui::WindowOptions options = windowFor(choice, state);
  if (!choice.focus.empty()) {
    std::vector<config::RunConfig> runs;
    {
      auto lock = store.lock();
      for (const auto& s : store.sessions()) runs.push_back(s.config);
    }
    state.pendingFocus = focusIndex(runs, choice.focus);
    if (state.pendingFocus < 0) {
      std::string names;
      for (const auto& r : runs) names += (names.empty() ? "" : ", ") + std::string(config::strategyName(r.strategy));
      std::fprintf(stderr,
                   "shardscope: error: --focus '%s' is not a strategy in %s (%s): name one of them, or drop --focus\n",
                   choice.focus.c_str(), path.c_str(), names.c_str());
      return 2;
    }
  }
  options.readyToCapture = [&] {
    return state.pendingAt.empty() && state.pendingZoom.empty() && state.pendingFocus < 0;
  };
  std::string error;
  const int rc = ui::runWindow(
      options, [&] { ui::drawAppFrame(state, store, &control); }, error);
  endIfStillReading(control, rc);
  if (rc != 0) std::fprintf(stderr, "shardscope: %s\n", error.c_str());
  return reportAtError(state, rc);
}

}  // namespace shardscope::app
