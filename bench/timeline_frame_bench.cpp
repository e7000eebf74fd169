// Frame build time of the timeline with a big run: 1 million events over 8 ranks, the whole run in
// view and zoomed in, then with the playhead playing and the "Who holds what" tab (grid and ring)
// open, in a headless ImGui context (CPU cost of building the frame; GPU drawing of the resulting
// vertices is not included). Event counts include the event groups (Group events). Past 8 ranks
// the timeline folds ranks into groups (ui/rank_rows.h); the bench then also measures every group
// expanded (the rows below the window culled).
//   build/bench/timeline_frame_bench [events_per_rank=125000] [ranks=8]
// With --open PATH..., the recording is a saved one instead, read as the window's Open reads it
// (ui/record_files.h: a PyTorch job's traces, a run's trace): the time to read it and the
// process's peak RSS after, then the same frames.
//   build/bench/timeline_frame_bench --open /tmp/job
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <imgui.h>

#include "ui/app_window.h"
#include "ui/column_peaks.h"
#include "ui/theme.h"
#include "ui/headless_frame.h"
#include "ui/playhead.h"
#include "ui/rank_rows.h"
#include "ui/record_files.h"
#include "ui/synthetic_recording.h"

namespace {

size_t eventsOf(const shardscope::trace::RunRecording& recording) {
  size_t events = 0;
  for (int r = 0; r < recording.ranks(); ++r) {
    const auto& t = recording.rank(r);
    events += t.memory.size() + t.compute.size() + t.collectives.size() + t.groups.size();
  }
  return events;
}

// The retained model's bytes per event it holds (RunRecording::detailBytes): the target is 32
// (docs/benchmarks.md, "Bytes per retained event").
double bytesPerEvent(const shardscope::trace::RunRecording& recording) {
  size_t bytes = 0;
  for (int r = 0; r < recording.ranks(); ++r) bytes += recording.detailBytes(r);
  return static_cast<double>(bytes) / static_cast<double>(std::max<size_t>(1, eventsOf(recording)));
}

// The saved recording at `paths`, read as the window's Open does, timed; false when it could not be.
bool openSaved(const std::vector<std::string>& paths, shardscope::ui::SessionStore& store) {
  const auto start = std::chrono::steady_clock::now();
  auto opened = shardscope::ui::openRecord(paths);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!opened.error.empty() || opened.sessions.empty()) {
    std::fprintf(stderr, "timeline_frame_bench: %s\n", opened.error.c_str());
    return false;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto lock = store.lock();
  const auto& recording = opened.sessions.front().recording;
  std::printf("opened in %.2f s, peak RSS %.0f MB: %zu events over %d ranks, %.1f bytes each retained\n", seconds,
              usage.ru_maxrss / 1024.0, eventsOf(recording), recording.ranks(), bytesPerEvent(recording));
  for (auto& s : opened.sessions) store.add(std::move(s));
  return true;
}

// The memory lanes' column search alone (ui/column_peaks.h), on one core: every lane of the
// recording searched for the whole run and for 85% of it by turns, as the wheel's zoom does. Median
// ms per frame of every lane.
void measureColumnSearch(const shardscope::trace::RunRecording& recording, int width, int frames) {
  using namespace shardscope;
  double first = 1e300, last = -1e300;
  for (int r = 0; r < recording.ranks(); ++r) {
    const auto& m = recording.rank(r).memory;
    if (m.empty()) continue;
    first = std::min(first, static_cast<double>(m.time(0)));
    last = std::max(last, static_cast<double>(m.time(m.size() - 1)));
  }
  if (first > last) return;
  std::vector<double> ms;
  size_t shown = 0;
  for (int i = 0; i < frames; ++i) {
    const ui::ColumnSpan span{first, first + (last - first) * (i % 2 ? 0.85 : 1.0), width};
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < recording.ranks(); ++r) {
      const auto& t = recording.rank(r);
      shown += ui::findMemoryColumns(t.memory, t.memoryTotals, span).size();
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-28s median %.2f ms  p90 %.2f ms  (%d ranks' lanes, %d columns each, one core)\n",
              "memory lanes' search, zoomed", ms[ms.size() / 2], ms[ms.size() * 9 / 10], recording.ranks(), width);
  (void)shown;
}

using Measure = std::function<void(const char*, int, const std::function<void()>&)>;

// A live run's frames: its recording changes every frame (the store's version moves), and the
// comparison table's figures and the event groups, which walk every event, follow it only as often
// as their cost allows (ui/derived_refresh.h): the row's median is a frame between passes, and each
// pass's cost is printed after it.
void measureLiveRun(const Measure& measure, shardscope::ui::SessionStore& store, shardscope::ui::AppState& state,
                    int frames) {
  using shardscope::ui::SessionStatus;
  const auto setStatus = [&](SessionStatus status) {
    auto lock = store.lock();
    store.sessions().front().status = status;
  };
  setStatus(SessionStatus::Running);
  measure("live run, store changed", frames, [&] { store.touch(); });
  std::printf("%-28s a pass %.1f ms, at most every %.1f s while a run records; event groups %.1f ms, every %.2f s\n",
              "  (comparison figures)", state.statsRefresh.lastCostSeconds() * 1e3,
              state.statsRefresh.intervalSeconds(), state.marksRefresh.lastCostSeconds() * 1e3,
              state.marksRefresh.intervalSeconds());
  setStatus(SessionStatus::Done);
}

// A live window past its budget folds its oldest steps as the next step ends (a sixteenth of them,
// every rank through the same step). With every rank folded before the marks' next pass, the
// folded groups' marks are dropped and the new ones made (updateGroupMarks), where before every
// mark was made again (eventGroupMarks, timed beside it). Last: it folds the bench's recording.
void measureFoldedMarks(shardscope::ui::SessionStore& store) {
  using namespace shardscope;
  auto lock = store.lock();
  auto& rec = store.sessions().front().recording;
  // The synthetic run records no step ends: each rank's steps are given theirs, from its groups.
  std::vector<std::vector<trace::Event>> stepEnds(static_cast<size_t>(rec.ranks()));
  for (int r = 0; r < rec.ranks(); ++r) {
    for (const auto& g : rec.rank(r).groups) {
      auto& ends = stepEnds[static_cast<size_t>(r)];
      if (ends.empty() || ends.back().step != g.step) {
        trace::Event end;
        end.kind = trace::EventKind::StepEnd;
        end.rank = r;
        end.step = g.step;
        end.beginNs = g.beginNs;
        ends.push_back(end);
      }
      ends.back().endNs = std::max(g.beginNs, g.endNs) + 1;
    }
    for (size_t k = 0; k + 1 < stepEnds[static_cast<size_t>(r)].size(); ++k)
      rec.add(stepEnds[static_cast<size_t>(r)][k]);
  }
  std::vector<ui::EventGroupMark> marks;
  ui::GroupMarksBasis basis;
  ui::updateGroupMarks(rec, marks, basis);
  const size_t before = marks.size();
  size_t events = 0;
  for (int r = 0; r < rec.ranks(); ++r) events += rec.detailEvents(r);
  rec.keepDetailWithinOverRanks(events - events / 64, [](int, trace::RankTimeline&&) {});
  for (int r = 0; r < rec.ranks(); ++r) rec.add(stepEnds[static_cast<size_t>(r)].back());  // the last step ends
  const auto start = std::chrono::steady_clock::now();
  ui::updateGroupMarks(rec, marks, basis);
  const double updated = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const auto again = std::chrono::steady_clock::now();
  const size_t all = ui::eventGroupMarks(rec).size();
  const double made = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - again).count();
  std::printf("%-28s %.1f ms (%zu of %zu marks dropped, %s); making all %zu again: %.1f ms\n", "marks after a fold",
              updated, basis.droppedMarks, before, basis.extended ? "the rest kept" : "all made again", all, made);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shardscope::ui;
  const bool open = argc > 2 && std::string(argv[1]) == "--open";
  const int perRank = !open && argc > 1 ? std::atoi(argv[1]) : 125000;
  int ranks = !open && argc > 2 ? std::atoi(argv[2]) : 8;
  HeadlessImGui imgui(1600, 1000);
  applyTheme();
  SessionStore store;
  if (open) {
    if (!openSaved(std::vector<std::string>(argv + 2, argv + argc), store)) return 1;
    auto lock = store.lock();
    ranks = store.sessions().front().recording.ranks();
  } else {
    auto lock = store.lock();
    Session s;
    s.title = "full_shard (synthetic)";
    s.recording = syntheticRecording(ranks, perRank);
    s.status = SessionStatus::Done;
    std::printf("%zu events over %d ranks, %.1f bytes each retained\n", eventsOf(s.recording), ranks,
                bytesPerEvent(s.recording));
    store.add(std::move(s));
  }
  AppState state;
  state.viewOnly = true;
  state.banner = "synthetic";
  // `beforeFrame` changes what the next frame shows (the view moved), outside its timing.
  auto measure = [&](const char* label, int frames, const std::function<void()>& beforeFrame = {}) {
    std::vector<double> ms;
    int vertices = 0;
    for (int i = 0; i < frames; ++i) {
      if (beforeFrame) beforeFrame();
      const auto start = std::chrono::steady_clock::now();
      vertices = imgui.frame([&] { drawAppFrame(state, store, nullptr); }, 800, 300);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-28s median %.2f ms  p90 %.2f ms  (%d vertices; drawn %d, folded %d)\n", label, ms[ms.size() / 2],
                ms[ms.size() * 9 / 10], vertices, state.lastStats.spansDrawn, state.lastStats.spansFolded);
  };
  // More frames for a profiler to sample (perf record -D past the open): FRAMES=300.
  const int frames = std::getenv("FRAMES") ? std::max(1, std::atoi(std::getenv("FRAMES"))) : 30;
  measure("whole run in view", frames);
  // The same, with the view dragged a pixel each frame (the timeline pans by whole pixels): every
  // memory lane keeps the columns still in view and searches the one brought in (ui/memory_columns.h).
  const double pixelNs = (state.axis.endNs - state.axis.beginNs) / state.lastStats.laneWidth;
  state.axis.userMoved = true;
  measure("whole run, dragged each frame", frames, [&] {
    state.axis.beginNs += pixelNs;
    state.axis.endNs += pixelNs;
  });
  std::printf("%-28s lanes' columns searched %lld (%lld of them dragged), kept %lld in all\n", "  (memory lanes)",
              static_cast<long long>(state.memoryColumns.found()), static_cast<long long>(state.memoryColumns.moved()),
              static_cast<long long>(state.memoryColumns.kept()));
  // Zoomed a notch in and out by turns (the wheel): every column of every lane is searched again.
  const double wheelRange = state.axis.endNs - state.axis.beginNs;
  int notch = 0;
  measure("whole run, zoomed each frame", frames,
          [&] { state.axis.endNs = state.axis.beginNs + wheelRange * (++notch % 2 ? 0.85 : 1.0); });
  state.axis.userMoved = false;
  measureLiveRun(measure, store, state, frames);
  {
    auto lock = store.lock();
    measureColumnSearch(store.sessions().front().recording, static_cast<int>(state.lastStats.laneWidth), frames);
  }
  if (ranks > kRanksUnfolded) {
    for (int g = 0; g < kRanksUnfolded; ++g) state.expandedRankGroups[0].insert(g);
    measure("every rank group expanded", 30);
    state.expandedRankGroups.clear();
  }
  state.axis.userMoved = true;
  state.axis.beginNs = (state.axis.endNs - state.axis.beginNs) * 0.4;
  state.axis.endNs = state.axis.beginNs + 2e6;
  measure("zoomed to 2 ms", 30);
  // A class stepping through: the whole run in view, the playhead playing mid-run, and the
  // holdings grid with a collective in flight animated beside it.
  state.axis.userMoved = false;
  state.openTab = bottomTabTitle("holdings");
  imgui.frame([&] { drawAppFrame(state, store, nullptr); }, 800, 300);  // the tab opens
  state.openTab = bottomTabTitle("holdings");
  state.playhead.placed = true;
  state.playhead.tNs = (state.axis.endNs - state.axis.beginNs) * 0.5;
  state.playhead.playing = true;
  state.playhead.speed = 0.01;
  measure("playing, who holds what", 30);
  std::printf("%-28s %d cells, ring %s\n", "  (holdings drawn)", state.lastHoldings.cells,
              state.ringShown ? state.ringCollective.c_str() : "not shown");
  measureFoldedMarks(store);
  return 0;
}
