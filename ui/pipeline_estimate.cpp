#include "ui/pipeline_estimate.h"

#include <imgui.h>

#include "config/pipeline_config.h"
#include "config/strategies.h"
#include "estimate/pipeline_prediction.h"
#include "trace/format.h"
#include "ui/item_probe.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

bool samePipelineRun(const config::RunConfig& a, const config::RunConfig& b) {
  const auto sa = config::pipelineShapeOf(a), sb = config::pipelineShapeOf(b);
  return a.model == b.model && a.layers == b.layers && a.hidden == b.hidden && a.seq == b.seq && a.batch == b.batch &&
         a.world == b.world && a.tp == b.tp && a.strategy == b.strategy && a.precision == b.precision &&
         a.optimizer == b.optimizer && a.pp == b.pp && sa.schedule == sb.schedule &&
         sa.stagesPerRank == sb.stagesPerRank && sa.microBatches == sb.microBatches;
}

// The measured figure of the ranks of pipeline rank `pipeRank`: their largest.
template <typename Figure>
double measuredAt(const config::RunConfig& c, const std::vector<stats::RankStats>& ranks, int pipeRank, Figure f) {
  double most = 0;
  for (const auto& r : ranks) {
    if (config::pipelinePlace(r.rank, c.world, c.pp).pipeRank == pipeRank) most = std::max(most, f(r));
  }
  return most;
}

void cell(const std::string& predicted, const std::string& measured, bool same) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(predicted.c_str());
  if (measured.empty()) return;
  ImGui::SameLine();
  ImGui::TextColored(same ? ImVec4(0.45f, 0.85f, 0.45f, 1) : ImVec4(0.95f, 0.65f, 0.35f, 1), "%s",
                     same ? "= run" : ("measured " + measured).c_str());
}

}  // namespace

int measuringPipelineSession(const config::RunConfig& config, const std::vector<Session>& sessions,
                             const std::vector<std::vector<stats::RankStats>>& stats) {
  for (size_t i = 0; i < sessions.size() && i < stats.size(); ++i) {
    if (samePipelineRun(config, sessions[i].config) && !stats[i].empty() && stats[i].front().recorded) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void drawPipelinePrediction(const config::RunConfig& config, const std::vector<Session>& sessions,
                            const std::vector<std::vector<stats::RankStats>>& stats) {
  const auto p = estimate::predictPipeline(config);
  const int measuring = measuringPipelineSession(config, sessions, stats);
  ImGui::TextWrapped(
      "PREDICTION per pipeline rank: %s, P = %d, V = %d, M = %d, %s over each stage's %d data rank(s); "
      "bubble %s = %.1f%% of the ideal time (closed form)",
      config::modeName(p.shape.schedule), p.shape.ranks, p.shape.stagesPerRank, p.shape.microBatches,
      config::strategyName(config.strategy), config::dataRankCount(config), p.bubble.form.c_str(),
      100 * p.bubble.fraction);
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("pipeline prediction", 4, flags)) return;
  for (const char* h : {"pipe rank (stages)", "model states", "activations held", "sent to stages/step"}) {
    ImGui::TableSetupColumn(h);
  }
  ImGui::TableHeadersRow();
  const std::vector<stats::RankStats> none;
  const auto& ranks = measuring >= 0 ? stats[static_cast<size_t>(measuring)] : none;
  const bool measured = measuring >= 0;
  for (const auto& r : p.ranks) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    std::string stages;
    for (int s : r.stages) stages += (stages.empty() ? "" : ",") + std::to_string(s);
    ImGui::Text("%d (%s)", r.pipeRank, stages.c_str());
    // The optimizer's state as it stays between steps: its peak adds the update's temporaries.
    const double states = measuredAt(config, ranks, r.pipeRank, [](const stats::RankStats& s) {
      using trace::MemoryRole;
      const auto at = [](MemoryRole role) { return static_cast<size_t>(role); };
      return static_cast<double>(s.peakByRole[at(MemoryRole::ParamShard)] + s.peakByRole[at(MemoryRole::GradFull)] +
                                 s.peakByRole[at(MemoryRole::GradShard)] +
                                 s.afterLastStep[at(MemoryRole::OptimizerState)]);
    });
    cell(trace::formatBytes(static_cast<double>(r.modelStateBytes)), measured ? trace::formatBytes(states) : "",
         std::abs(states - static_cast<double>(r.modelStateBytes)) <= 0.01 * states);
    const double held = measuredAt(config, ranks, r.pipeRank,
                                   [](const stats::RankStats& s) { return double(s.peakMicroBatchesInFlight); });
    cell(std::to_string(r.peakMicroBatches) + " micro-batches", measured ? std::to_string(static_cast<int>(held)) : "",
         held == r.peakMicroBatches);
    const int pipe = static_cast<int>(trace::ProcessGroup::Pipe);
    const double sent = measuredAt(config, ranks, r.pipeRank, [&](const stats::RankStats& s) {
      return s.recordedSteps > 0 ? double(s.sentBytesByGroup[pipe]) / s.recordedSteps : 0.0;
    });
    cell(trace::formatBytes(static_cast<double>(r.sentBytesPerStep)), measured ? trace::formatBytes(sent) : "",
         sent == static_cast<double>(r.sentBytesPerStep));
  }
  ImGui::EndTable();
  noteItem("estimate:pipeline-table");
  wrappedHint(measured ? "\"= run\": the matching run measured the predicted figure; the bubble it measured is in the "
                         "Schedule tab and Comparison"
                       : "measured: run this configuration to put its figures here");
}

}  // namespace shardscope::ui
