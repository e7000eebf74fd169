#include "ui/panels.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include <imgui.h>

#include "config/pipeline_config.h"
#include "config/strategies.h"
#include "estimate/run_prediction.h"
#include "stats/comparison_figures.h"
#include "stats/run_stats.h"
#include "trace/format.h"
#include "ui/figure_bars.h"
#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

// The text left of a bar (name and value): 340 px at scale 1, about 44 characters.
float labelWidth() { return px(340.0f); }

// A mode's values from its table (config/modes.h).
template <typename E>
bool combo(const char* label, E& value) {
  bool changed = false;
  if (ImGui::BeginCombo(label, config::modeName(value))) {
    for (const auto& entry : config::modeNames(E{})) {
      if (ImGui::Selectable(entry.name, value == entry.value)) {
        value = entry.value;
        changed = true;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

void stackedBar(const trace::RoleBytes& bytes, double scale, float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + height), IM_COL32(30, 32, 36, 255));
  float x = p.x;
  for (int role = 0; role < trace::kTensorRoleCount; ++role) {
    if (bytes[role] <= 0 || scale <= 0) continue;
    const float w = static_cast<float>(bytes[role] / scale * width);
    dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + w, p.y + height), roleColor(static_cast<trace::MemoryRole>(role)));
    x += w;
  }
  ImGui::Dummy(ImVec2(width, height));
}

// A session's name in the bar charts: its strategy (a PyTorch job's records: "PyTorch job", as
// its strategy is only the closest to what it ran), and its world size when the sessions differ in it.
std::string sessionLabel(const std::vector<Session>& sessions, size_t i) {
  const std::string name =
      sessions[i].jobLabel.empty() ? config::strategyName(sessions[i].config.strategy) : "PyTorch job";
  for (const auto& s : sessions) {
    if (s.config.world != sessions[i].config.world) return name + " N=" + std::to_string(sessions[i].config.world);
  }
  return name;
}

constexpr const char* kNoStepsRecorded = "unknown (no steps recorded)";

// One horizontal bar per session on a shared scale, labelled with the formatted value: `format`
// labels session i's value.
void valueBars(const char* title, const std::vector<Session>& sessions, const std::vector<double>& values,
               const std::function<std::string(size_t)>& format, ImU32 color) {
  double scale = 0;
  for (double v : values) scale = std::max(scale, v);
  ImGui::TextUnformatted(title);
  const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth() - 10.0f, 100.0f);
  for (size_t i = 0; i < sessions.size(); ++i) {
    ImGui::Text("  %-20s %18s", sessionLabel(sessions, i).c_str(), format(i).c_str());
    ImGui::SameLine(labelWidth());
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(p, ImVec2(p.x + barWidth, p.y + px(12)), IM_COL32(30, 32, 36, 255));
    if (scale > 0)
      dl->AddRectFilled(p, ImVec2(p.x + static_cast<float>(values[i] / scale) * barWidth, p.y + px(12)), color);
    ImGui::Dummy(ImVec2(barWidth, px(12)));
  }
}

// compare --worlds: per strategy, one bar per world size of the largest rank's memory by role at
// its peak, and a white tick at the estimator's predicted model states. Nothing (false) when every
// session ran at one world size.
bool drawScalingWithWorldSize(const std::vector<Session>& sessions,
                              const std::vector<std::vector<stats::RankStats>>& stats) {
  bool acrossWorlds = false;
  for (const auto& s : sessions) acrossWorlds |= s.config.world != sessions.front().config.world;
  if (!acrossWorlds) return false;
  double scale = 1;
  for (const auto& r : stats) {
    for (const auto& s : r) scale = std::max(scale, static_cast<double>(s.peakTotal));
  }
  ImGui::Spacing();
  ImGui::TextUnformatted(
      "Per-rank memory against the world size N (largest rank at its peak, measured; white tick: "
      "the estimator's PREDICTED model states)");
  const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth() - 10.0f, 100.0f);
  std::vector<config::StrategyKind> strategies;
  for (const auto& s : sessions) {
    if (std::find(strategies.begin(), strategies.end(), s.config.strategy) == strategies.end()) {
      strategies.push_back(s.config.strategy);
    }
  }
  for (config::StrategyKind strategy : strategies) {
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (sessions[i].config.strategy != strategy || !stats::anyRecorded(stats[i])) continue;
      const stats::RankStats* largest = nullptr;
      for (const auto& s : stats[i]) {
        if (!largest || s.peakTotal > largest->peakTotal) largest = &s;
      }
      if (!largest) continue;
      ImGui::Text("  %-14s N=%-3d %12s", config::strategyName(strategy), sessions[i].config.world,
                  formatBytes(static_cast<double>(largest->peakTotal)).c_str());
      ImGui::SameLine(labelWidth());
      const ImVec2 p = ImGui::GetCursorScreenPos();
      stackedBar(largest->atPeakTotal, scale, barWidth, px(14));
      if (estimate::predictionProblem(sessions[i].config)) continue;
      const double predicted = static_cast<double>(estimate::predictRun(sessions[i].config).modelStateBytes());
      const float x = p.x + static_cast<float>(predicted / scale) * barWidth;
      ImGui::GetWindowDrawList()->AddLine(ImVec2(x, p.y - 2), ImVec2(x, p.y + 16), IM_COL32(255, 255, 255, 255), 2.0f);
    }
  }
  ImGui::TextDisabled(
      "the sharded strategies' model states fall as 1/N; activations only with each rank's share of "
      "the batch; gathered units and communication buffers not at all");
  return true;
}

// Tensor memory only: the device lanes (allocator cache, runtime) are not allocations.
int64_t sum(const trace::RoleBytes& b) {
  int64_t t = 0;
  for (int role = 0; role < trace::kTensorRoleCount; ++role) t += b[role];
  return t;
}

}  // namespace

std::optional<std::string> compareRunsOf(const config::RunConfig& config, const CompareChoice& choice,
                                         std::vector<config::RunConfig>& runs) {
  std::vector<int> worlds;
  if (choice.worlds[0] != '\0') {
    if (auto e = config::parseWorldList(choice.worlds, worlds)) return e;
  }
  runs = config::comparisonRuns(config, choice.strategies, worlds);
  return worlds.empty() ? std::nullopt : config::comparisonProblem(runs);
}

namespace {

void drawModelFields(config::RunConfig& c) {
  ImGui::TextUnformatted("Model");
  combo("model", c.model);
  ImGui::InputInt("layers", &c.layers);
  ImGui::InputInt("hidden", &c.hidden);
  if (c.model == config::ModelKind::Gpt) {
    ImGui::InputInt("heads", &c.heads);
    ImGui::InputInt("seq", &c.seq);
    ImGui::InputInt("vocab", &c.vocab);
  } else {
    ImGui::InputInt("features", &c.features);
    ImGui::InputInt("classes", &c.classes);
  }
  ImGui::InputInt("lora rank", &c.loraRank);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "0: full fine-tuning. r > 0: LoRA; the base weights are frozen and rank-r\n"
        "adapters on the blocks' linear layers train, so only they have gradients\n"
        "and optimizer state: see what DDP and FSDP then hold and send.");
  }
}

// --pp and what it reads, laid out as the run will lay the stages out. Without --pp the pipeline's
// own options are cleared: a value left in them would refuse the run.
void drawPipelineFields(config::RunConfig& c) {
  ImGui::InputInt("pp", &c.pp);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "--pp: the model split into this many pipeline stages along its blocks, each on\n"
        "world / pp consecutive ranks; activations and their gradients cross stages by\n"
        "send and recv, micro-batch by micro-batch, in the schedule's order. 1: none.");
  }
  if (c.pp <= 1) {
    c.microbatches = 0;
    c.stagesPerRank = 0;
    return;
  }
  combo("schedule", c.schedule);
  ImGui::InputInt("M batches", &c.microbatches);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("--microbatches: micro-batches per data rank's batch; 0: P, or 2P for the looped schedules");
  ImGui::InputInt("V per rank", &c.stagesPerRank);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "--stages-per-rank: interleaved_1f1b and zero_bubble 2 or more, zbv and dualpipev 2; 0: the schedule's");
  const auto shape = config::pipelineShapeOf(c);
  ImGui::TextDisabled("mesh %d x %d x %d (pipe, data, tensor); M %d, V %d", shape.ranks, config::dataRankCount(c),
                      std::max(1, c.tp), shape.microBatches, shape.stagesPerRank);
}

void drawParallelismFields(config::RunConfig& c) {
  ImGui::TextUnformatted("Parallelism");
  ImGui::SliderInt("world", &c.world, 1, config::kMaxWorldSize);
  combo("strategy", c.strategy);
  // The field shows for the hybrid strategies only; a value left in it would refuse the others.
  if (!config::traitsOf(c.strategy).replicatesShardGroups) c.shardGroupSize = 0;
  ImGui::TextDisabled("%s", config::zeroName(c.strategy).c_str());
  ImGui::InputInt("tp", &c.tp);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "--tp: groups of this many consecutive ranks split each block's matrices\n"
        "(Megatron's column- and row-parallel linears) and all-reduce activations;\n"
        "the strategy then works over world / tp data ranks. 1: none.");
  }
  if (c.tp > 1 && c.pp <= 1) ImGui::TextDisabled("mesh %d x %d (data, tensor)", c.world / std::max(1, c.tp), c.tp);
  // Sequence parallelism splits what a tensor group leaves whole; a value left on would refuse --tp 1.
  if (c.tp <= 1 || c.model != config::ModelKind::Gpt) c.sequenceParallel = false;
  drawPipelineFields(c);
  if (c.tp > 1 && c.model == config::ModelKind::Gpt) {
    ImGui::Checkbox("sequence parallel", &c.sequenceParallel);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "--sequence-parallel: the residual stream and the LayerNorms keep seq / tp tokens\n"
          "per rank; all-gathers and reduce-scatters replace the all-reduces (same bytes),\n"
          "and activations divide by tp entirely.");
    }
  }
  if (config::traitsOf(c.strategy).replicatesShardGroups) {
    ImGui::InputInt("shard group", &c.shardGroupSize);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "ranks that split the parameters among them (FSDP2's shard mesh dimension);\n"
          "the world is that many ranks times the replicas. 0: shardscope picks.");
    }
    if (c.tp > 1) {
      ImGui::TextDisabled("mesh %d x %d x %d (replicate, shard, tensor)", config::replicaCount(c),
                          config::shardGroupSize(c), c.tp);
    } else {
      ImGui::TextDisabled("mesh %d x %d (replicate, shard)", config::replicaCount(c), config::shardGroupSize(c));
    }
  }
  if (config::traitsOf(c.strategy).reducesInBuckets) {
    float cap = static_cast<float>(c.bucketCapMb);
    if (ImGui::InputFloat("bucket MiB", &cap, 0.5f, 5.0f, "%.2f")) c.bucketCapMb = cap;
  } else {
    ImGui::SliderInt("prefetch", &c.prefetch, 0, config::kMaxPrefetch);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("units all-gathered ahead of the one computing");
  }
  combo("device", c.device);
  // Offload is the sharded strategies' (FSDP2's CPUOffloadPolicy); a value left in it would refuse
  // the others.
  if (!config::traitsOf(c.strategy).shardsParameters) {
    c.offload = config::Offload::Off;
  } else {
    combo("offload", c.offload);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "cpu (GPU ranks): shards and their gradients in pinned host memory, copied to the GPU\n"
          "for each all-gather and back after each reduce-scatter; the optimizer steps on the\n"
          "CPU, its state in host memory. A host lane under each rank shows that memory.");
    }
  }
  combo("bind cores", c.bindCores);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "rank: each rank process (and its NCCL threads) pinned to its own slice of\n"
        "the cores the app may use; off: the OS places them, as torchrun does");
  }
  combo("precision", c.precision);
  combo("step gate", c.stepGate);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "group: every rank waits before each event group (an all-gather, a unit's forward,\n"
        "a reshard, a backward, a reduce-scatter, a bucket's all-reduce, the optimizer)\n"
        "until you press Step; step: before each training step. Continue lets it run.");
  }
}

void drawTrainingFields(config::RunConfig& c) {
  ImGui::TextUnformatted("Training");
  ImGui::InputInt("batch", &c.batch);
  ImGui::InputInt("steps", &c.steps);
  ImGui::InputInt("accumulate", &c.accumulate);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "micro-batches per optimizer step: gradients are reduced only after the last\n"
        "(no_sync); FSDP then holds every unit's unsharded gradients meanwhile");
  }
  combo("checkpoint", c.activationCheckpointing);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "activation checkpointing: blocks keep only their input in forward and\n"
        "recompute their activations in backward (one more forward per block)");
  }
  combo("optimizer", c.optimizer);
  ImGui::InputDouble("lr", &c.lr, 0.0, 0.0, "%.2e");
  int seed = static_cast<int>(c.seed);
  if (ImGui::InputInt("seed", &seed)) c.seed = seed;
}

// Which strategies Compare runs, in the order of what they shard (ZeRO 0, 1, 2, 3), and at which
// world sizes.
void drawCompareChoice(CompareChoice& compare) {
  auto& compareStrategies = compare.strategies;
  ImGui::TextDisabled("Compare runs:");
  int column = 0;
  // The second column starts past the first's widest checkbox and label, at any UI scale.
  const ImGuiStyle& style = ImGui::GetStyle();
  float widestName = 0;
  for (const auto& row : config::strategyTable()) widestName = std::max(widestName, ImGui::CalcTextSize(row.name).x);
  const float secondColumn =
      style.WindowPadding.x + ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + widestName + 2 * style.ItemSpacing.x;
  for (config::StrategyKind strategy : config::allModes<config::StrategyKind>()) {
    bool on = std::find(compareStrategies.begin(), compareStrategies.end(), strategy) != compareStrategies.end();
    if (column++ % 2 == 1) ImGui::SameLine(secondColumn);
    const bool toggled = ImGui::Checkbox(config::strategyName(strategy), &on);
    noteItem((std::string("compare:") + config::strategyName(strategy)).c_str());
    if (toggled) {
      std::vector<config::StrategyKind> next;
      for (config::StrategyKind s : config::allModes<config::StrategyKind>()) {
        const bool was = std::find(compareStrategies.begin(), compareStrategies.end(), s) != compareStrategies.end();
        if (s == strategy ? on : was) next.push_back(s);
      }
      compareStrategies = next;
    }
  }
  ImGui::SetNextItemWidth(px(80.0f));
  ImGui::InputText("at worlds", compare.worlds, sizeof compare.worlds);
  noteItem("compare:worlds");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "e.g. 1,2,4: each strategy at each world size on the same global batch, with a chart of\n"
        "per-rank memory against N; empty: the world size above");
  }
}

ConfigAction drawRunButtons(bool busy, bool compareEnabled, const std::string& problem,
                            const std::string& compareProblem) {
  ConfigAction action = ConfigAction::None;
  const bool valid = problem.empty();
  ImGui::BeginDisabled(busy || !valid);
  if (ImGui::Button("Run", ImVec2(px(80), 0))) action = ConfigAction::Run;
  ImGui::SameLine();
  ImGui::BeginDisabled(!compareEnabled);
  if (ImGui::Button("Compare", ImVec2(px(80), 0))) action = ConfigAction::Compare;
  noteItem("compare");
  ImGui::EndDisabled();
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!busy);
  if (ImGui::Button("Stop", ImVec2(px(60), 0))) action = ConfigAction::Stop;
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("stop the running ranks");
  if (!valid || !compareProblem.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", (valid ? "Compare: " + compareProblem : problem).c_str());
    ImGui::PopStyleColor();
  }
  return action;
}

}  // namespace

ConfigAction drawConfigPanel(config::RunConfig& c, CompareChoice& compare, bool busy, const std::string& problem,
                             const std::string& compareProblem) {
  // Fields end where the longest label begins, at every UI scale (ImGui's default is a fixed share
  // of the panel, which cuts the labels once the scrollbar grows with the scale).
  ImGui::PushItemWidth(-(ImGui::CalcTextSize("checkpoint").x + ImGui::GetStyle().ItemInnerSpacing.x));
  drawModelFields(c);
  ImGui::Separator();
  drawParallelismFields(c);
  ImGui::Separator();
  drawTrainingFields(c);
  ImGui::Separator();
  drawCompareChoice(compare);
  const ConfigAction action =
      drawRunButtons(busy, !compare.strategies.empty() && compareProblem.empty(), problem, compareProblem);
  ImGui::PopItemWidth();
  return action;
}

void drawRoleLegend(bool (&showRole)[trace::kMemoryRoleCount]) {
  ImGui::TextUnformatted("Memory roles (stacked, bottom first)");
  for (int role = 0; role < trace::kMemoryRoleCount; ++role) {
    ImGui::PushID(role);
    ImGui::ColorButton("##role", ImGui::ColorConvertU32ToFloat4(roleColor(static_cast<trace::MemoryRole>(role))),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(px(12), px(12)));
    ImGui::SameLine();
    ImGui::Checkbox(trace::memoryRoleName(static_cast<trace::MemoryRole>(role)), &showRole[role]);
    ImGui::PopID();
  }
  ImGui::TextDisabled("hide activation to see FSDP's\ngather-and-free sawtooth up close");
  ImGui::TextDisabled(
      "GPU lanes: allocator_cache =\nreserved - allocated; device_runtime\n= CUDA context, NCCL, non-PyTorch");
}

// A label, then its roles as one stacked bar against `scale`; hovered, the bytes of its first
// `roles` roles (the host has the tensor roles alone).
void labelledRoleBar(const std::string& label, const trace::RoleBytes& bytes, double scale, float barWidth,
                     int roles = trace::kMemoryRoleCount) {
  ImGui::TextUnformatted(label.c_str());
  ImGui::SameLine(labelWidth());
  stackedBar(bytes, scale, barWidth, px(12));
  if (!ImGui::IsItemHovered()) return;
  ImGui::BeginTooltip();
  for (int role = 0; role < roles; ++role) {
    ImGui::Text("%-16s %s", trace::memoryRoleName(static_cast<trace::MemoryRole>(role)),
                formatBytes(static_cast<double>(bytes[role])).c_str());
  }
  ImGui::EndTooltip();
}

std::string barLabel(int rank, const char* where, const std::string& when, int64_t total) {
  char text[96];
  std::snprintf(text, sizeof text, "rank %d %s%-10s %10s", rank, where, when.c_str(),
                formatBytes(static_cast<double>(total)).c_str());
  return text;
}

// A summary keeps each rank's split at its peak, not memory over time: those bars, and what the
// rest needs.
void drawSavedPeaks(const std::vector<stats::RankStats>& ranks) {
  if (!stats::anyMemoryRecorded(ranks)) {
    ImGui::TextDisabled("memory was not recorded in this run (--recording off, or a trace without memory events)");
    return;
  }
  double scale = 1;
  for (const auto& r : ranks) scale = std::max(scale, static_cast<double>(r.peakTotal));
  const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth() - 10.0f, 100.0f);
  for (const auto& r : ranks) {
    labelledRoleBar(barLabel(r.rank, "", "at peak", r.peakTotal), r.atPeakTotal, scale, barWidth);
    if (itemProbeOn()) noteItem(("memory:saved-peak:" + std::to_string(r.rank)).c_str());
  }
  wrappedHint(
      "a summary keeps each rank's split at its peak; the split at the playhead, and the host's under "
      "--offload cpu, need the run's --trace (the host's peaks are in Comparison)");
}

void drawMemoryBreakdown(const Session& session, const TimelineCursor& cursor) {
  if (session.fromSummary) {
    drawSavedPeaks(session.savedStats);
    return;
  }
  const auto& rec = session.recording;
  double scale = 1, hostScale = 1;
  for (int r = 0; r < rec.ranks(); ++r) {
    scale = std::max(scale, static_cast<double>(rec.rank(r).peakTotal));
    hostScale = std::max(hostScale, static_cast<double>(rec.rank(r).host.peakTotal));
  }
  const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth() - 10.0f, 100.0f);
  for (int r = 0; r < rec.ranks(); ++r) {
    const auto& t = rec.rank(r);
    const std::string now = cursor.valid ? "at " + formatDuration(cursor.tNs) : "";
    if (cursor.valid) {
      const auto at = memoryAt(rec, r, cursor.tNs);
      labelledRoleBar(barLabel(r, "", now, sum(at)), at, scale, barWidth);
    }
    labelledRoleBar(barLabel(r, "", "at peak", t.peakTotal), t.atPeakTotal, scale, barWidth);
    // --offload cpu: the host's bars under the device's, to the highest host peak of any rank.
    if (t.host.peakTotal == 0) continue;
    if (cursor.valid) {
      const auto at = memoryAt(rec, r, cursor.tNs, trace::MemorySpace::Host);
      labelledRoleBar(barLabel(r, "host ", now, sum(at)), at, hostScale, barWidth, trace::kTensorRoleCount);
    }
    labelledRoleBar(barLabel(r, "host ", "at peak", t.host.peakTotal), t.host.atPeakTotal, hostScale, barWidth,
                    trace::kTensorRoleCount);
  }
  if (recordsHostMemory(rec))
    ImGui::TextDisabled("host bars (--offload cpu): to their own scale, the highest host peak");
  if (!cursor.valid) ImGui::TextDisabled("hover a memory lane to see the split at that moment");
}

std::vector<std::vector<stats::RankStats>> sessionStats(const std::vector<Session>& sessions) {
  std::vector<std::vector<stats::RankStats>> stats;
  for (const auto& s : sessions) {
    stats.push_back(s.fromSummary ? s.savedStats
                                  : stats::computeRankStats(s.config, s.recording, s.parameterCount, s.deviceFacts));
  }
  return stats;
}

// --offload cpu: what the ranks held in host memory, its total and the roles that live there, after
// the device's rows; a session that kept everything on its device says so rather than "0 B".
template <typename Row>
void hostMemoryRows(const std::vector<std::vector<stats::RankStats>>& stats, Row&& row) {
  auto offloaded = [](const std::vector<stats::RankStats>& ranks) {
    return std::any_of(ranks.begin(), ranks.end(), [](const stats::RankStats& s) { return s.peakHost > 0; });
  };
  if (std::none_of(stats.begin(), stats.end(), offloaded)) return;
  auto cell = [&](const std::vector<stats::RankStats>& ranks, auto&& bytes) {
    if (!stats::anyMemoryRecorded(ranks)) return std::string("not recorded");  // --recording off
    if (!offloaded(ranks)) return std::string("none (not offloaded)");
    int64_t m = 0;
    for (const auto& s : ranks) m = std::max(m, bytes(s));
    return formatBytes(static_cast<double>(m));
  };
  row("peak in host memory (--offload cpu)",
      [&](const auto& r) { return cell(r, [](const stats::RankStats& s) { return s.peakHost; }); });
  for (auto role : trace::kOffloadedRoles) {
    const std::string name = std::string("  ") + trace::memoryRoleName(role) + " (host)";
    row(name.c_str(), [&](const auto& r) {
      return cell(r, [role](const stats::RankStats& s) { return s.peakHostByRole[static_cast<int>(role)]; });
    });
  }
}

namespace {

// One row of the comparison table: its name, then each session's cell, from its ranks' figures
// or from the comparison's (stats/comparison_figures.h).
template <class Sessions, class Cell>
void comparisonRow(const Sessions& sessions, const char* name, Cell&& cell) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(name);
  for (const auto& s : sessions) {
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(cell(s).c_str());
  }
}

template <class Figure>
double maxOf(const std::vector<stats::RankStats>& ranks, Figure&& f) {
  double m = 0;
  for (const auto& r : ranks) m = std::max(m, static_cast<double>(f(r)));
  return m;
}

// Memory cells: "not recorded" where no rank's memory was (--recording off, or a PyTorch job's
// trace without [memory] events), not a 0 that reads as measured.
template <class Cell>
std::string memoryCell(const std::vector<stats::RankStats>& r, Cell&& cell) {
  return stats::anyMemoryRecorded(r) ? cell(r) : std::string("not recorded");
}

// Per-step cells: why there is no figure (perStepFigureMissing), else the figure.
template <class Cell>
std::string perStepCell(const std::vector<stats::RankStats>& r, Cell&& cell) {
  const std::string missing = stats::perStepFigureMissing(r);
  return missing.empty() ? cell(r) : missing;
}

// The table's memory rows: the peak, by role, what backward found saved, the host's.
void memoryTableRows(const std::vector<std::vector<stats::RankStats>>& stats) {
  auto row = [&](const char* name, auto&& cell) { comparisonRow(stats, name, cell); };
  row("peak memory", [&](const auto& r) {
    return memoryCell(r, [&](const auto& rr) {
      return formatBytes(maxOf(rr, [](const stats::RankStats& s) { return s.peakTotal; }));
    });
  });
  bool anyDeviceLanes = false;
  for (const auto& r : stats) {
    for (const auto& s : r) anyDeviceLanes |= s.peakDevice > s.peakTotal;
  }
  if (anyDeviceLanes) {
    row("peak on device (with GPU lanes)",
        [&](const auto& r) { return formatBytes(maxOf(r, [](const stats::RankStats& s) { return s.peakDevice; })); });
  }
  for (int role = 0; role < trace::kMemoryRoleCount; ++role) {
    const std::string name = std::string("  ") + trace::memoryRoleName(static_cast<trace::MemoryRole>(role));
    row(name.c_str(), [&](const auto& r) {
      return memoryCell(r, [&](const auto& rr) {
        return formatBytes(maxOf(rr, [&](const stats::RankStats& s) { return s.peakByRole[role]; }));
      });
    });
  }
  row("  activation saved for backward", [&](const auto& r) {
    return memoryCell(r, [&](const auto& rr) {
      const double saved = maxOf(rr, [](const stats::RankStats& s) { return s.activationSavedBytes; });
      // Measured when backward begins: with no step, a 0 says nothing.
      return saved > 0 || stats::anyStepRecorded(rr) ? formatBytes(saved) : std::string(kNoStepsRecorded);
    });
  });
  hostMemoryRows(stats, row);
}

// The table's time and traffic rows: step time, throughput, each collective, overlap.
void figureTableRows(const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats) {
  auto row = [&](const char* name, auto&& cell) { comparisonRow(stats, name, cell); };
  const auto figures = stats::comparisonFigures(comparedRuns(sessions, stats));
  // A row of the figures stats/ computed once; `cell` formats a session's.
  auto figureRow = [&](const char* name, auto&& cell) { comparisonRow(figures, name, cell); };
  // ... and a per-step one: why there is none, where the session has none.
  auto perStepRow = [&](const char* name, auto&& cell) {
    figureRow(name, [&](const stats::ComparisonFigures& f) {
      const std::string missing = stats::perStepFigureMissing(f);
      return missing.empty() ? cell(f) : missing;
    });
  };
  figureRow("step time", [&](const stats::ComparisonFigures& f) {
    // CUDA memory snapshots on their own hold no steps; a run can stop in its first.
    if (!f.stepTimed) return std::string(kNoStepsRecorded);
    const std::string time = trace::formatMilliseconds(f.stepSeconds);
    // A PyTorch job's own trace (no batch in it) timed its steps under torch.profiler, which
    // records shapes and memory: slower than the job runs, so not a figure to compare.
    return f.throughputKnown ? time : time + " (under torch.profiler)";
  });
  figureRow("samples/s (all ranks)", [&](const stats::ComparisonFigures& f) {
    if (!f.stepTimed) return std::string(kNoStepsRecorded);
    if (!f.throughputKnown) return std::string("unknown (no batch in the record)");
    return trace::formatRate(f.samplesPerSecond, "");
  });
  for (auto op : stats::collectiveOpsShown(stats)) {
    const std::string name = std::string(trace::collectiveOpName(op)) + "/step: size / sent / time";
    row(name.c_str(), [&](const auto& r) {
      if (r.empty()) return std::string("-");
      return perStepCell(r, [&](const auto& rr) {
        const auto& c = rr.front().collectives[static_cast<int>(op)];
        const double steps = std::max<double>(1, rr.front().recordedSteps);
        if (c.count == 0) return std::string("-");
        return trace::formatCollectiveBytes(c, c.sizeBytes, steps) + " / " +
               trace::formatCollectiveBytes(c, c.sentBytes, steps) + " / " + formatDuration(c.seconds * 1e9 / steps);
      });
    });
  }
  row("all/step: size / sent / received", [&](const auto& r) {
    if (r.empty()) return std::string("-");
    return perStepCell(r, [&](const auto& rr) {
      const auto all = trace::allCollectives(rr.front().collectives);
      const double steps = std::max<double>(1, rr.front().recordedSteps);
      return trace::formatCollectiveBytes(all, all.sizeBytes, steps) + " / " +
             trace::formatCollectiveBytes(all, all.sentBytes, steps) + " / " +
             trace::formatCollectiveBytes(all, all.receivedBytes, steps);
    });
  });
  if (std::any_of(figures.begin(), figures.end(), [](const stats::ComparisonFigures& f) { return f.baseline >= 0; })) {
    const std::string name = std::string("  sent, ratio to ") + config::baselineStrategy().name;
    perStepRow(name.c_str(), [](const stats::ComparisonFigures& f) {
      return f.baseline >= 0 ? trace::formatRatio(f.sentRatioToBaseline) : std::string("-");
    });
  }
  if (std::any_of(figures.begin(), figures.end(), [](const stats::ComparisonFigures& f) {
        return f.recomputeSecondsPerStep > 0;
      })) {  // activation checkpointing: what the memory it saves costs in compute
    perStepRow("recompute per step",
               [](const stats::ComparisonFigures& f) { return formatDuration(1e9 * f.recomputeSecondsPerStep); });
  }
  // Who made the others wait (stats/stragglers.h): the rank most often last to issue a collective.
  row("most often last / others waited", [&](const auto& r) {
    return perStepCell(r, [&](const auto& rr) {
      const stats::RankStats* last = stats::mostOftenLast(rr);
      if (!last) return std::string("-");
      char share[48];
      std::snprintf(share, sizeof share, "rank %d, %.0f %% / ", last->rank, 100.0 * last->lastArrivalShare);
      return share + formatDuration(1e9 * last->waitCausedSeconds / std::max(1, last->recordedSteps)) + "/step";
    });
  });
  perStepRow("exposed comm per step",
             [](const stats::ComparisonFigures& f) { return formatDuration(1e9 * f.exposedCommSeconds); });
  perStepRow("comm/compute overlap",
             [](const stats::ComparisonFigures& f) { return trace::formatPercent(f.overlapPercent); });
}

// Peak memory of the largest rank by role, one bar per session, on one scale; across world sizes,
// grouped by strategy with the estimator's model states marked.
void drawPeakMemoryBars(const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats) {
  if (!drawScalingWithWorldSize(sessions, stats)) {
    double scale = 1;
    for (const auto& r : stats) {
      for (const auto& s : r) scale = std::max(scale, static_cast<double>(s.peakTotal));
    }
    ImGui::Spacing();
    ImGui::TextUnformatted("Peak memory by role (largest rank, at its peak)");
    const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth() - 10.0f, 100.0f);
    for (size_t i = 0; i < sessions.size(); ++i) {
      const stats::RankStats* largest = nullptr;
      for (const auto& s : stats[i]) {
        if (!largest || s.peakTotal > largest->peakTotal) largest = &s;
      }
      const bool measured = largest && stats::anyMemoryRecorded(stats[i]);
      ImGui::Text("  %-20s %18s", sessionLabel(sessions, i).c_str(),
                  measured ? formatBytes(static_cast<double>(largest->peakTotal)).c_str() : "not recorded");
      ImGui::SameLine(labelWidth());
      stackedBar(largest ? largest->atPeakTotal : trace::RoleBytes{}, scale, barWidth, px(14));
    }
  }
}

// The other figures as bars on their own scales: step time, throughput, traffic, overlap.
void drawFigureBars(const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats) {
  ImGui::Spacing();
  for (const auto& bar : figureBars(sessions, stats)) {
    valueBars(
        bar.title.c_str(), sessions, bar.values, [&](size_t i) { return bar.labels[i]; }, bar.color);
    if (!bar.note.empty()) ImGui::TextDisabled("%s", bar.note.c_str());
  }
}

}  // namespace

void drawComparison(const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats) {
  if (sessions.empty() || stats.size() != sessions.size()) {
    ImGui::TextDisabled("run or compare to see figures here");
    return;
  }
  const int columns = static_cast<int>(sessions.size()) + 1;
  if (ImGui::BeginTable("comparison", columns,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("figure (max over ranks)");
    for (const auto& s : sessions) ImGui::TableSetupColumn(s.title.c_str());
    ImGui::TableHeadersRow();
    memoryTableRows(stats);
    figureTableRows(sessions, stats);
    ImGui::EndTable();
  }
  drawPeakMemoryBars(sessions, stats);
  drawFigureBars(sessions, stats);
}

}  // namespace shardscope::ui
