#include "ui/bottom_tabs.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <imgui.h>

#include "config/view_tabs.h"
#include "ui/activation_split.h"
#include "ui/collectives_table.h"
#include "ui/diff_view.h"
#include "ui/estimate_panel.h"
#include "ui/export_files.h"
#include "ui/item_probe.h"
#include "ui/panels.h"
#include "ui/step_through.h"
#include "ui/projector_mode.h"
#include "ui/schedule_view.h"
#include "ui/timeline_style.h"

namespace shardscope::ui {

const std::vector<std::vector<stats::RankStats>>& TabFrame::stats() {
  const auto began = DerivedRefresh::Clock::now();
  if (state.stats.size() != sessions.size() || state.statsRefresh.due(store.version(), anyRecording(sessions), began)) {
    state.stats = sessionStats(sessions);
    state.statsRefresh.derived(store.version(), began, DerivedRefresh::Clock::now());
  }
  return state.stats;
}

double TabFrame::playheadOf(int index) const {
  const auto& own = state.alignment.playheadNs;
  return index >= 0 && static_cast<size_t>(index) < own.size() ? own[static_cast<size_t>(index)] : playheadNs;
}

namespace {

// Between a live run's passes the figures lag its recording: said, with how often they follow,
// where passes are costly enough to be spaced out (a small run's follow every half second).
void drawStaleFiguresNote(const DerivedRefresh& refresh, uint64_t version) {
  if (!refresh.stale(version) || refresh.intervalSeconds() <= refresh.minIntervalSeconds()) return;
  const double age = std::chrono::duration<double>(DerivedRefresh::Clock::now() - refresh.lastPass()).count();
  ImGui::TextDisabled(
      "figures as of %.1f s ago: while a run records they follow it every %.1f s (a pass over "
      "every event in detail takes %.0f ms)",
      age, refresh.intervalSeconds(), refresh.lastCostSeconds() * 1e3);
}

void drawComparisonTab(TabFrame& f) {
  const auto& stats = f.stats();
  drawStaleFiguresNote(f.state.statsRefresh, f.store.version());
  drawComparison(f.sessions, stats);
}

// At the playhead; the memory lanes' tooltips give the hovered time.
void drawMemoryTab(TabFrame& f) {
  const int last = static_cast<int>(f.sessions.size()) - 1;
  const int index = f.cursorSession >= 0 ? f.cursorSession : std::min(f.state.playhead.session, last);
  if (index < 0) return;
  ImGui::TextDisabled("%s", f.sessions[index].title.c_str());
  TimelineCursor atPlayhead;
  atPlayhead.valid = true;
  atPlayhead.tNs = f.playheadOf(index);
  drawMemoryBreakdown(f.sessions[index], atPlayhead);
  f.state.lastActivationSplits.clear();
  if (static_cast<size_t>(index) < f.state.pipelineLanes.size()) {
    const PipelineLanes& lanes = f.state.pipelineLanes[static_cast<size_t>(index)];
    f.state.lastActivationSplits = drawActivationsByMicroBatch(f.sessions[index], lanes, atPlayhead.tNs);
  }
}

void drawHoldings(TabFrame& f) { drawHoldingsTab(f.state, f.sessions, f.playheadNs); }

void drawCollectivesTab(TabFrame& f) { drawLastCollectives(f.sessions); }

void drawDiff(TabFrame& f) {
  refreshDiff(f.state.diff, f.sessions, f.stats(), f.store.version());
  drawDiffTab(f.state.diff, f.sessions);
  if (!f.state.diff.pendingAt.empty()) {  // a change clicked: B's timeline, there
    f.state.playhead.session = std::min(1, static_cast<int>(f.sessions.size()) - 1);
    f.state.atError.clear();
    f.state.pendingAt = f.state.diff.pendingAt;
    f.state.diff.pendingAt.clear();
  }
}

void drawSchedule(TabFrame& f) {
  drawScheduleTab(f.state.schedule, f.sessions, f.state.pipelineLanes, f.store.version(), f.playheadNs,
                  f.state.playhead.session);
}

void drawEstimateTab(TabFrame& f) {
  if (!f.sessions.empty() && !f.sessions.front().jobLabel.empty()) {
    // A PyTorch job's own trace: its model is not known, so there is nothing to predict for it
    // (a prediction for shardscope's defaults would read as the job's).
    ImGui::TextWrapped("No prediction: %s. Predictions are for shardscope's own models; %s",
                       f.sessions.front().jobLabel.c_str(),
                       f.state.viewOnly ? "open the app (shardscope) to predict for one."
                                        : "Run or Compare one of them (the sidebar) to predict for it.");
    return;
  }
  // What is on screen: a viewed file's own configuration, else the one Run would start.
  const config::RunConfig& predicted =
      f.state.viewOnly && !f.sessions.empty() ? f.sessions.front().config : f.state.config;
  drawEstimatePanel(f.state.estimate, predicted, f.sessions, f.stats());
}

void drawExportTab(TabFrame& f) {
  AppState& state = f.state;
  ImGui::TextUnformatted("Write what the app shows, for Perfetto, a spreadsheet or a slide.");
  ImGui::InputText("file name base", state.exportBase, sizeof state.exportBase);
  ImGui::TextDisabled("a compare writes one trace/CSV per strategy: BASE.<strategy>.json");
  ImGui::BeginDisabled(f.sessions.empty());
  const bool traceClicked = ImGui::Button("Trace JSON (Perfetto)");
  noteItem("export:trace");
  if (traceClicked) state.exportMessage = exportSessions(f.sessions, state.exportBase, ExportFormat::TraceJson);
  ImGui::SameLine();
  const bool csvClicked = ImGui::Button("Memory CSV");
  noteItem("export:csv");
  if (csvClicked) state.exportMessage = exportSessions(f.sessions, state.exportBase, ExportFormat::MemoryCsv);
  ImGui::EndDisabled();
  ImGui::SameLine();
  const bool pngClicked = ImGui::Button("PNG of the window");
  noteItem("export:png");
  if (pngClicked) state.pngRequest = std::string(state.exportBase) + ".png";
  if (!state.exportMessage.empty()) ImGui::TextWrapped("%s", state.exportMessage.c_str());
}

// The Help tab: the keyboard shortcuts, then what the views show.
void drawHelp(TabFrame& f) {
  const AppState& state = f.state;
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "Keyboard shortcuts");
  for (const char* const* line = displayShortcuts(); *line; ++line) ImGui::BulletText("%s", *line);
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "What you see");
  const char* const notes[] = {
      "Playhead: plays at 0.01x to 1x of the run's time (the slider beside Play); the arrows step by event group "
      "(an all-gather, a unit's forward, a reshard, a backward, a reduce-scatter, a bucket's all-reduce, the "
      "optimizer). Every tab below follows it.",
      "Step gate (run with step gate group|step): the ranks wait before each event group; Step (or the Right arrow "
      "at the live edge) releases them for one, Continue for the rest. Pauses are shaded.",
      "Who holds what: per rank and unit, the bytes held by role at the playhead; a collective in flight (or "
      "clicked) is animated as the textbook ring beside it.",
      "Hover a memory lane for the exact bytes per role; hover a block for its timing; click a collective to "
      "highlight the same collective on every rank.",
      "Full-shard: orange (param_gathered) rises before each unit and falls after it.",
      "Estimate: closed-form PREDICTIONS for this configuration (\"= run\" where a matching run measured exactly "
      "that), and the seed documents' will-it-fit tables (7B, Llama-70B).",
      "lora rank > 0: LoRA. Base weights frozen, small adapters train: Compare shows how little sharding saves then "
      "(gradients and optimizer state are tiny) and what it still sends.",
      "accumulate > 1: micro-batches reduced once per step (no_sync). FSDP then holds every unit's full gradients "
      "(grad_full) and gathers again per micro-batch.",
      "checkpoint blocks: each block keeps only its input; in backward it runs forward again (R spans, after its "
      "all-gather): the activation lane shrinks, each step grows.",
      "Schedule (pp > 1, compare --schedules, or a PyTorch pipeline job's traces): one step, each rank's forwards "
      "and backwards as they ran over the schedule's plan laid out with the run's own mean times, the bubble "
      "hatched, each send an arrow to the receive that took it (hover for its bytes), the micro-batches whose "
      "activations it holds; its bubble measured, planned and by the closed form (a PREDICTION).",
      "Diff (two recordings open): B against A, step time within its noise or not, and the largest changes; click "
      "one to put the playhead where it happens in B.",
  };
  for (const char* note : notes) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s", note);
  }
  ImGui::BulletText("Frame build %.2f ms: %d spans drawn, %d folded, %d memory columns.", state.lastFrameBuildMs,
                    state.lastStats.spansDrawn, state.lastStats.spansFolded, state.lastStats.memoryColumns);
}

// Brings the tab named in state.openTab to the front once.
ImGuiTabItemFlags tabFlags(const AppState& state, const char* title) {
  return state.openTab == title ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
}

}  // namespace

const std::vector<BottomTab>& bottomTabs() {
  static const std::vector<BottomTab> tabs = {
      {"comparison", drawComparisonTab},
      {"memory", drawMemoryTab},
      {"holdings", drawHoldings, &AppState::holdingsShown},
      {"schedule", drawSchedule, &AppState::scheduleShown},
      {"collectives", drawCollectivesTab},
      {"diff", drawDiff},
      {"estimate", drawEstimateTab, &AppState::estimateShown},
      {"export", drawExportTab},
      {"help", drawHelp},
  };
  return tabs;
}

void drawBottomTabs(AppState& state, SessionStore& store, const std::vector<Session>& sessions, int cursorSession,
                    double playheadNs) {
  ImGui::BeginChild("bottom", ImVec2(0, 0), true);
  if (ImGui::BeginTabBar("views")) {
    TabFrame frame{state, store, sessions, cursorSession, playheadNs};
    for (const auto& tab : bottomTabs()) {
      const char* title = bottomTabTitle(tab.name);
      const bool open = ImGui::BeginTabItem(title, nullptr, tabFlags(state, title));
      noteItem((std::string("tab:") + title).c_str());
      if (tab.shown) state.*tab.shown = open;
      if (!open) continue;
      state.shownTab = tab.name;
      tab.draw(frame);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
    state.openTab.clear();
  }
  ImGui::EndChild();
}

}  // namespace shardscope::ui
