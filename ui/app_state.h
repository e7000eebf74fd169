// What the window keeps between frames (AppState): the configuration the panels edit, the time
// axis and playhead, the display choices, a lesson, the Open and Listen panels, and what the last
// frame drew and derived. The panels and views below the window take it; the window draws it
// (app_window.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "ui/derived_refresh.h"
#include "ui/diff_alignment.h"
#include "ui/diff_view.h"
#include "ui/pipeline_lanes.h"
#include "ui/estimate_panel.h"
#include "ui/holdings_view.h"
#include "ui/memory_columns.h"
#include "ui/lesson_state.h"
#include "ui/listen_panel.h"
#include "ui/open_panel.h"
#include "ui/panels.h"
#include "ui/playhead.h"
#include "ui/projector_mode.h"
#include "ui/ring_view.h"
#include "ui/schedule_view.h"
#include "ui/session_store.h"
#include "ui/timeline_view.h"

namespace shardscope::ui {

struct AppState {
  config::RunConfig config;
  CompareChoice compare;  // what Compare runs: strategies, and world sizes
  DisplayChoice display;  // projector mode: scale, palette, focus, memory scale per session
  int pendingFocus = -1;  // --focus: the session to focus once it exists
  LessonState lesson;     // a lesson being taught (--lesson, or the Lessons menu)
  TimeAxis axis;
  // Where the sessions' detail begins (ns from their origins): after the steps a long run folded
  // to stay within its budget of events, 0 otherwise. The axis fits from here, and play starts here.
  double detailStartNs = 0;
  TimelineStyle style;
  MemoryColumnCache memoryColumns;  // the memory lanes' columns, kept while the view stays put
  CollectiveSelection selection;
  TimelineCursor cursor;
  ListenChoice listen;                    // the sidebar's Listen for a launched job
  OpenChoice open;                        // the sidebar's Open a recording
  std::vector<std::string> droppedPaths;  // dropped on the window since the last frame: opened
  // Per session (by its index in the store): the rank groups of a large job shown rank by rank.
  std::map<int, std::set<int>> expandedRankGroups;
  Playhead playhead;
  // Each session's event groups on one clock, rebuilt when the store changes (playhead.h); while
  // a run records, only now and then (ui/derived_refresh.h).
  std::vector<std::vector<EventGroupMark>> marks;
  std::vector<GroupMarksBasis> markBases;  // what each session's marks were made from
  DerivedRefresh marksRefresh{0.25};
  HoldingsFrameStats lastHoldings;
  RingFrameStats lastRing;
  std::string pendingAt;       // --at: where to put the playhead once the run has ended
  std::string pendingZoom;     // --zoom: the timelines' visible window, likewise
  std::string atError;         // why either could not be put there
  bool ringShown = false;      // a collective was animated in the last frame
  std::string ringCollective;  // which ("all_gather blocks.1, step 0"), for tests and the caption
  // What the first screen asked for, started at the next frame's input: the first screen is drawn
  // while the window holds the session store, and starting runs takes it.
  ConfigAction doorAction = ConfigAction::None;
  std::vector<config::RunConfig> doorRuns;  // Compare's runs
  std::string doorLesson;                   // a lesson picked there, by name
  std::string openTab;                      // a tab below the timelines to bring to the front, e.g. "Estimate"
  std::string shownTab;   // the tab in front as last drawn, by its name ("holdings"): for the page's status
  std::string banner;     // e.g. the file being viewed
  bool viewOnly = false;  // `shardscope view`: no configuration panel actions
  std::string viewNote = "(recorded run; nothing is running)";  // under the banner when viewOnly
  // Where the timelines go while there are none and nothing runs (a view, or the page before a file).
  std::string nothingYet = "Nothing recorded yet: what the ranks record is drawn here as it arrives.";
  double lastFrameBuildMs = 0;
  TimelineFrameStats lastStats;
  // The memory lanes as last drawn: how tall, and each session's top of scale in bytes (for tests).
  float lastMemoryLaneHeight = 0;
  std::vector<double> lastMemoryScales;
  // The Memory tab as last drawn: each rank's activations split by micro-batch (--pp; ui/activation_split.h).
  std::vector<std::string> lastActivationSplits;
  bool timelinesScroll = false;  // the sessions did not all fit: the timelines scroll (PageUp/PageDown)
  float timelinesScrollY = 0;    // how far they are scrolled
  int scrollToSession = -1;      // a session to scroll the timelines to once it is drawn (a caption's run)
  // The stragglers view's waits per session, recomputed when the store changes while it is on
  // (only now and then while a run records, ui/derived_refresh.h).
  std::vector<SessionWaits> waits;
  DerivedRefresh waitsRefresh;
  // Each session's pipeline lanes (empty where it ran none), likewise (ui/pipeline_lanes.h).
  std::vector<PipelineLanes> pipelineLanes;
  DerivedRefresh pipelineRefresh;
  // Export from the app: paths typed in the Export tab; the PNG is written by the platform layer
  // after the frame is drawn (it reads pngRequest and reports into exportMessage).
  char exportBase[256] = "shardscope-run";
  std::string pngRequest;
  std::string exportMessage;
  EstimatePanelState estimate;
  bool estimateShown = false;  // the Estimate tab was in front last frame: it gets more room
  bool holdingsShown = false;  // so does "Who holds what"
  bool scheduleShown = false;  // and the Schedule
  ScheduleViewState schedule;
  DiffViewState diff;
  // While the Diff tab is in front with two timelines open: A lined up with B by step, each
  // session's playhead at the same moment of the algorithm (ui/diff_alignment.h), and what B's
  // lanes mark. Elsewhere each session's playhead is the playhead's time.
  SessionAlignment alignment;
  DiffOverlay diffOverlay;
  // Figures derived from the store, recomputed only when the store changes (they walk every
  // event, which a frame must not do), and while a run records only now and then (ui/derived_refresh.h).
  std::vector<std::vector<stats::RankStats>> stats;
  DerivedRefresh statsRefresh;
};

// The tabs below the timelines by the names the command line uses (comparison, memory, holdings,
// collectives, estimate, export, help): the tab's title, or nullptr for an unknown name.
const char* bottomTabTitle(const std::string& name);

}  // namespace shardscope::ui
