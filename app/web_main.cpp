// shardscope in the browser: the viewer's window over what the page opens (a file from its picker,
// one dropped on it, one served beside it and named in its link), with no engine: a lesson plays
// from the recordings the site ships (app/lesson_replay.h). Its link sets the moment shown, as the
// app's options do: #lesson=NAME&caption=N, #open=FILE&tab=NAME&at=TIME, and #scale=1.5&contrast=high.
// What it shows is readable from JavaScript (shardscope_status), for tests and for the page.
#include <emscripten.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/lesson_replay.h"
#include "app/web_control.h"
#include "lessons/lesson.h"
#include "ui/app_state.h"
#include "ui/app_window.h"
#include "ui/lesson_view.h"
#include "ui/platform_window.h"
#include "ui/ui_scale.h"

namespace {

using namespace shardscope;

// The page outlives main (the browser calls each frame): what the frames use lives here.
ui::SessionStore store;
ui::AppState state;
app::WebControl control(store);
// Every lesson plays from the recordings the site ships, chosen from the front door, the menu or the link.
std::unique_ptr<app::LessonReplayControl> replay;
ui::WindowOptions options;
std::function<void()> frame;
int frames = 0;
double firstFrameMs = 0;  // on the page's clock (performance.now(): from the page's start)
std::string linkError;    // a part of the link that could not be followed

// The link's part after '#', its NAME=VALUE pairs read by the browser as the page reads #open=
// (URLSearchParams: split, then decoded).
std::map<std::string, std::string> linkParts() {
  const char* json =
      emscripten_run_script_string("JSON.stringify(Object.fromEntries(new URLSearchParams(location.hash.slice(1))))");
  const auto parsed = nlohmann::json::parse(json ? json : "{}", nullptr, /*allow_exceptions=*/false);
  std::map<std::string, std::string> parts;
  if (!parsed.is_object()) return parts;
  for (const auto& [name, value] : parsed.items()) {
    if (value.is_string()) parts[name] = value.get<std::string>();
  }
  return parts;
}

// Where the site keeps a lesson's recordings (cmake/WebBuild.cmake preloads them).
std::string lessonRecordings(const std::string& name) { return "/lessons/recordings/" + name; }

// #lesson=NAME&caption=N: the lesson at that caption, as the app's --lesson NAME --caption N.
void startLinkedLesson(const std::map<std::string, std::string>& parts) {
  const auto name = parts.find("lesson");
  if (name == parts.end()) return;
  lessons::Lesson lesson;
  if (auto error = lessons::loadLesson(name->second, lesson)) {
    linkError = "#lesson=" + name->second + ": " + *error;
    return;
  }
  ui::startLesson(state, replay.get(), lesson, /*predictFirst=*/false);
  if (!replay->replayError().empty()) linkError = replay->replayError();
  if (auto caption = parts.find("caption"); caption != parts.end()) {
    const int n = std::atoi(caption->second.c_str());
    if (n >= 1 && n <= static_cast<int>(lesson.captions.size())) {
      state.lesson.caption = n - 1;
    } else {
      linkError = "#caption=" + caption->second + " is not a caption of lesson '" + lesson.name + "': it has " +
                  std::to_string(lesson.captions.size()) + ", from 1";
    }
  }
}

// tab, at, scale and contrast, as view's --tab, --at, --ui-scale and --high-contrast.
void followLink(const std::map<std::string, std::string>& parts) {
  startLinkedLesson(parts);
  if (auto tab = parts.find("tab"); tab != parts.end()) {
    if (const char* title = ui::bottomTabTitle(tab->second)) {
      state.openTab = title;
    } else {
      linkError =
          "#tab=" + tab->second + " is no tab: comparison, memory, holdings, collectives, estimate, export, help";
    }
  }
  if (auto at = parts.find("at"); at != parts.end()) state.pendingAt = at->second;
  if (auto scale = parts.find("scale"); scale != parts.end()) {
    const float value = std::strtof(scale->second.c_str(), nullptr);
    if (value >= ui::kMinUiScale && value <= ui::kMaxUiScale) {
      state.display.look.scale = value;
    } else {
      linkError = "#scale=" + scale->second + " is not a scale from 0.75 to 3";
    }
  }
  if (auto contrast = parts.find("contrast"); contrast != parts.end()) {
    state.display.look.highContrast = contrast->second == "high";
  }
}

// How many of the lesson's claims hold on its runs, once they are checked.
int claimsHolding() {
  int holding = 0;
  for (const auto& check : state.lesson.checks) holding += check.holds ? 1 : 0;
  return holding;
}

// A session as the status gives it: its title, ranks, events in detail, and per rank its peak
// (tensor memory) and its completed steps, the figures a test compares with view's summary.
nlohmann::json sessionStatus(const ui::Session& s) {
  size_t events = 0;
  nlohmann::json peaks = nlohmann::json::array(), steps = nlohmann::json::array();
  for (int r = 0; r < s.recording.ranks(); ++r) {
    const auto& rank = s.recording.rank(r);
    events += s.recording.detailEvents(r);
    peaks.push_back(rank.peakTotal);
    steps.push_back(rank.folded.steps + static_cast<int>(rank.steps.size()));
  }
  return {
      {"title", s.title}, {"ranks", s.recording.ranks()}, {"events", events}, {"peak_bytes", peaks}, {"steps", steps}};
}

}  // namespace

// For the page: a file it wrote into its file system (from the picker, or fetched for #open=),
// opened as a drop is; several files in one folder are one job's per-rank files.
extern "C" EMSCRIPTEN_KEEPALIVE void shardscope_open(const char* path) { state.droppedPaths.emplace_back(path); }

// For the page and its tests: what the window shows now, as JSON.
extern "C" EMSCRIPTEN_KEEPALIVE const char* shardscope_status() {
  static std::string text;
  nlohmann::json status = {{"frames", frames},
                           {"ready", frames >= 2},
                           {"first_frame_ms", firstFrameMs},
                           {"frame_build_ms", state.lastFrameBuildMs},
                           {"tab", state.shownTab},
                           {"viewing", state.banner},
                           {"scale", state.display.look.scale},
                           {"high_contrast", state.display.look.highContrast},
                           {"link_error", linkError},
                           {"replay_error", replay ? replay->replayError() : ""},
                           {"lesson", state.lesson.active ? state.lesson.lesson.name : ""},
                           {"caption", state.lesson.active ? state.lesson.caption + 1 : 0},
                           {"claims_checked", state.lesson.checked},
                           {"claims_hold", claimsHolding()}};
  const auto open = control.openStatus();
  status["open_error"] = open.error;
  status["opens"] = open.finished;
  auto lock = store.lock();
  nlohmann::json sessions = nlohmann::json::array();
  for (const auto& s : store.sessions()) sessions.push_back(sessionStatus(s));
  status["sessions"] = sessions;
  text = status.dump();
  return text.c_str();
}

// The lessons the site ships recordings of, for the replay.
std::vector<lessons::Lesson> shippedLessons() {
  std::vector<lessons::Lesson> shipped;
  for (const auto& name : lessons::lessonNames()) {
    lessons::Lesson lesson;
    if (!lessons::loadLesson(name, lesson) && lessons::missingRecordings(lesson, lessonRecordings(name)).empty()) {
      shipped.push_back(std::move(lesson));
    }
  }
  return shipped;
}

int main() {
  replay = std::make_unique<app::LessonReplayControl>(control, store, shippedLessons(), lessonRecordings);
  state.nothingYet =
      "Open a recording to see it here: a run's --trace or --summary, a job's rank files, a PyTorch job's\n"
      "torch.profiler traces, CUDA memory snapshots or Flight Recorder dumps. Pick them with the button at\n"
      "the bottom right (several files: one job's ranks), drop them on this page, or link one served beside\n"
      "the page: #open=FILE&tab=holdings&at=12ms&scale=1.5&contrast=high. They are read here; nothing is uploaded.";
  followLink(linkParts());
  options.title = "shardscope";
  options.width = 1600;
  options.height = 1000;
  options.droppedPaths = &state.droppedPaths;
  options.look = &state.display.look;
  options.captureRequest = &state.pngRequest;
  options.captureResult = &state.exportMessage;
  frame = [] {
    control.readAsked();  // what the last frame said it would read
    ui::drawAppFrame(state, store, replay.get());
    if (++frames == 1) firstFrameMs = emscripten_get_now();
  };
  std::string error;
  const int rc = ui::runWindow(options, frame, error);
  if (rc != 0) std::fprintf(stderr, "shardscope: %s\n", error.c_str());
  return rc;
}
