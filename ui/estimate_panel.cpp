#include "ui/estimate_panel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>

#include <imgui.h>

#include "estimate/activation_memory.h"
#include "estimate/model_state_table.h"
#include "estimate/parse_quantity.h"
#include "estimate/run_prediction.h"
#include "trace/format.h"
#include "config/model_layout.h"
#include "trace/ring_schedule.h"
#include "ui/item_probe.h"
#include "ui/pipeline_estimate.h"
#include "ui/theme.h"

namespace shardscope::ui {

namespace {

using estimate::When;
using trace::CollectiveOp;
using trace::MemoryRole;

// The strategies `compare` runs by default and those that divide something (ddp, zero1,
// shard_grad_op, full_shard); the hybrid ones join when the configuration or a session is one (six
// columns do not fit the tab's half at the default scale), and no_shard, whose figures are ddp's,
// when it is itself.
std::vector<config::StrategyKind> predictedStrategies(const config::RunConfig& config,
                                                      const std::vector<Session>& sessions) {
  std::vector<config::StrategyKind> used = {config.strategy};
  for (const auto& s : sessions) used.push_back(s.config.strategy);
  bool hybrid = false;
  for (config::StrategyKind k : used) hybrid |= config::traitsOf(k).replicatesShardGroups;
  std::vector<config::StrategyKind> kinds;
  for (const auto& row : config::strategyTable()) {
    const bool inUse = std::find(used.begin(), used.end(), row.kind) != used.end();
    const bool shown = row.replicatesShardGroups ? hybrid : row.comparedByDefault || row.shardsOptimizer;
    if (shown || inUse) kinds.push_back(row.kind);
  }
  return kinds;
}
constexpr MemoryRole kRoles[] = {MemoryRole::ParamShard, MemoryRole::ParamGathered, MemoryRole::GradFull,
                                 MemoryRole::GradShard, MemoryRole::OptimizerState};
constexpr CollectiveOp kOps[] = {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter};
// The seed documents' worked examples: 000_*.txt (7B, 3 GPUs) and 004_*.txt (Llama 70B, 840 GB).
struct SeedExample {
  const char* label;
  const char* probeName;
  const char* parameters;
  const char* worlds;
  float bytes[3];
  float trainedPercent;
  const char* architecture = nullptr;  // a preset whose activations join the bars, or none
  int recompute = 0;                   // kRecomputeNames' index
};
constexpr SeedExample kSeedExamples[] = {
    {"seed: 7B, 3 GPUs", "estimate:seed-7b", "7B", "1,3", {2, 2, 4}, 100},
    {"seed: Llama-70B, 8/16 H100s", "estimate:seed-70b", "70B", "1,8,16", {2, 2, 8}, 100},
    // The seeds' "LoRA, any model size: DDP": the adapters are tiny, but ddp still holds the
    // frozen weights whole, and 70B of bf16 weights do not fit in 80 GB.
    {"seed: LoRA on 70B, 4 GPUs", "estimate:seed-lora", "70B", "1,4", {2, 2, 12}, 0.5f},
    // The ZeRO paper's Figure 1: 120, 31.4, 16.6 and 1.9 GB for stages 0 to 3.
    {"ZeRO paper: 7.5B, 64 GPUs", "estimate:zero-figure-1", "7.5B", "64", {2, 2, 12}, 100},
    // The Llama-70B example with Llama-2 70B's activations at its 4k context (Korthikanti et al.)
    // under full recomputation: 5.37 GB per GPU at micro-batch 1 (521 GB with none).
    {"Llama-2 70B + activations", "estimate:seed-70b-activations", "70B", "16,32", {2, 2, 8}, 100, "llama2-70b", 2},
};
const ImVec4 kPredictionColor(1.0f, 0.78f, 0.35f, 1.0f);
const ImVec4 kMatchColor(0.5f, 0.85f, 0.5f, 1.0f);
const ImVec4 kMismatchColor(1.0f, 0.55f, 0.4f, 1.0f);

void predictionBadge() {
  ImGui::TextColored(kPredictionColor, "PREDICTION");
  ImGui::SameLine();
}

// The finished session that measured this strategy under the predicted configuration, if any (and
// recorded a step: the per-step figures compare per step).
int measuringSession(const config::RunConfig& config, config::StrategyKind strategy,
                     const std::vector<Session>& sessions, const std::vector<std::vector<stats::RankStats>>& stats) {
  for (size_t i = 0; i < sessions.size() && i < stats.size(); ++i) {
    if (sessions[i].status == SessionStatus::Done && sessions[i].config.strategy == strategy &&
        estimate::samePrediction(config, sessions[i].config) && stats::anyStepRecorded(stats[i])) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Summaries written before after_step_bytes existed read back as all zero; a real step always
// leaves parameters behind.
bool knowsAfterStep(const stats::RankStats& r) {
  return r.afterLastStep[static_cast<int>(MemoryRole::ParamShard)] > 0 ||
         r.afterLastStep[static_cast<int>(MemoryRole::ParamGathered)] > 0;
}

// Continues the current line where `width` more pixels fit, else starts the next: figures and
// buttons wrap in a narrow column or window instead of running off it. `spacing` as SameLine's.
void sameLineIfRoom(float width, float spacing = -1.0f) {
  ImGui::SameLine(0, spacing);
  if (ImGui::GetContentRegionAvail().x < width) ImGui::NewLine();
}

// The width (at text scale 1) below which the run's prediction and the what-if stack.
constexpr float kSideBySideWidth = 1500.0f;

// Notes where a figure of the prediction table was drawn, as "estimate:KIND:ROW:COLUMN", for the tests.
void noteCell(const char* kind) {
  if (!itemProbeOn()) return;
  noteItem((std::string("estimate:") + kind + ":" + std::to_string(ImGui::TableGetRowIndex()) + ":" +
            std::to_string(ImGui::TableGetColumnIndex()))
               .c_str());
}

// Shown after the predicted figure in the same cell: a green "= run" when the run measured
// exactly that, else what it measured instead. Below the figure when the column is too narrow
// for both (four strategies, host figures, projector text), so that nothing is cut off.
void measuredCell(int64_t measured, int64_t predicted) {
  const std::string text =
      measured == predicted ? "= run" : "measured " + trace::formatBytes(static_cast<double>(measured));
  sameLineIfRoom(ImGui::CalcTextSize(text.c_str()).x);
  ImGui::PushTextWrapPos(0.0f);  // at the column's edge: "measured" and its figure on two lines if need be
  ImGui::TextColored(measured == predicted ? kMatchColor : kMismatchColor, "%s", text.c_str());
  ImGui::PopTextWrapPos();
  noteCell("measured");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("measured %lld bytes, predicted %lld", static_cast<long long>(measured),
                      static_cast<long long>(predicted));
  }
}

// A collective type's size per step on rank 0 of a run, as the estimator predicts it.
int64_t measuredSizePerStep(const std::vector<stats::RankStats>& ranks, CollectiveOp op) {
  const auto& rank0 = ranks.front();
  const int64_t steps = std::max<int64_t>(1, rank0.recordedSteps);
  // Every step also all-reduces the 4-byte loss for the progress line: not training traffic.
  const int64_t logging = op == CollectiveOp::AllReduce ? 4 : 0;
  return rank0.collectives[static_cast<int>(op)].sizeBytes / steps - logging;
}

// The prediction table's rows: each strategy's predicted figure (its formula on hover), and under
// it what the matching session measured, where one is on screen (`measuring`: its index, or -1).
class PredictionTable {
 public:
  using Measure = std::function<int64_t(const std::vector<stats::RankStats>&)>;

  PredictionTable(const std::vector<estimate::RunPrediction>& predictions, const std::vector<int>& measuring,
                  const std::vector<std::vector<stats::RankStats>>& stats)
      : predictions_(predictions), measuring_(measuring), stats_(stats) {}

  // A row per role on the device; under --offload cpu, the roles the host holds in rows of their own.
  void memoryRows() const {
    for (bool host : {false, true}) {
      for (auto role : kRoles) memoryRow(role, host);
    }
  }

  // gpt: what forward saves for backward.
  void activationRow() const {
    if (predictions_[0].activationSavedBytes <= 0) return;
    label("activation, saved for backward");
    const Measure largestSaved = [](const std::vector<stats::RankStats>& ranks) {
      int64_t largest = 0;
      for (const auto& r : ranks) largest = std::max(largest, r.activationSavedBytes);
      return largest;
    };
    for (int i = 0; i < count(); ++i) {
      // A summary from before activation_saved_bytes existed has nothing to compare with.
      const bool known = measuring_[i] >= 0 && largestSaved(stats_[measuring_[i]]) > 0;
      cell(i, predictions_[i].activationSavedBytes, predictions_[i].activationFormula, known ? largestSaved : nullptr);
    }
  }

  void collectiveRows() const {
    for (auto op : kOps) {
      const std::string name = std::string(trace::collectiveOpName(op)) + " per step";
      label(name.c_str());
      for (int i = 0; i < count(); ++i) {
        const auto* c = predictions_[i].find(op);
        // The measured figure includes a tensor group's (--tp): so does the predicted one.
        const auto* tensor = predictions_[i].tensorGroup(op);
        if (!c && !tensor) {
          none();
          continue;
        }
        const std::string tensorFormula = tensor ? "the tensor group's: " + tensor->formula : std::string();
        cell(i, (c ? c->bytes : 0) + (tensor ? tensor->bytes : 0),
             c && tensor ? c->formula + "; and " + tensorFormula
             : c         ? c->formula
                         : tensorFormula,
             [op](const std::vector<stats::RankStats>& ranks) { return measuredSizePerStep(ranks, op); });
      }
    }
  }

  // What a rank sends of them under the ring schedule, each collective among its own group's ranks.
  void sentRow(int world) const {
    label("sent per rank per step (ring)");
    for (int i = 0; i < count(); ++i) {
      cell(i, predictions_[i].sentBytesPerStep(),
           "all-reduce 2(N-1)/N x size, all-gather and reduce-scatter (N-1)/N x size, summed",
           [world](const std::vector<stats::RankStats>& ranks) {
             const auto& rank0 = ranks.front();
             const int64_t steps = std::max<int64_t>(1, rank0.recordedSteps);
             int64_t sent = 0;
             for (auto op : kOps) sent += rank0.collectives[static_cast<int>(op)].sentBytes / steps;
             // Less the 4-byte loss all-reduced among every rank each step for the progress line.
             return sent - trace::ringTrafficPerRank(CollectiveOp::AllReduce, world, 4).sentBytes;
           });
    }
  }

 private:
  int count() const { return static_cast<int>(predictions_.size()); }

  static void label(const char* text) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(text);
  }

  static void none() {
    ImGui::TableNextColumn();
    ImGui::TextDisabled("-");
  }

  void memoryRow(MemoryRole role, bool host) const {
    const estimate::PredictedMemory* any = nullptr;
    for (const auto& p : predictions_) any = any ? any : p.find(role, host);
    if (!any) return;
    const std::string name = std::string(trace::memoryRoleName(role)) +
                             (any->when == When::Peak ? ", peak" : ", after step") + (host ? ", host" : "");
    label(name.c_str());
    for (int i = 0; i < count(); ++i) {
      const auto* m = predictions_[i].find(role, host);
      if (!m) {
        none();
        continue;
      }
      if (m->when == When::AfterStep && measuring_[i] >= 0 && !knowsAfterStep(stats_[measuring_[i]].front())) {
        cell(i, m->bytes, m->formula, nullptr, m->host);  // an older summary: nothing to compare with
        continue;
      }
      const bool afterStep = m->when == When::AfterStep;
      cell(
          i, m->bytes, m->formula,
          [role, afterStep, host](const std::vector<stats::RankStats>& ranks) {
            int64_t largest = 0;
            for (const auto& r : ranks) largest = std::max(largest, stats::measuredRoleBytes(r, role, afterStep, host));
            return largest;
          },
          m->host);
    }
  }

  // One strategy's cell. `host`: the prediction is of host memory (--offload cpu), and so is what it
  // is measured against.
  void cell(int strategy, int64_t predicted, const std::string& formula, const Measure& measure,
            bool host = false) const {
    ImGui::TableNextColumn();
    const std::string bytes = trace::formatBytes(static_cast<double>(predicted));
    ImGui::TextUnformatted(bytes.c_str());
    noteCell("figure");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", formula.c_str());
    if (host) {  // beside the figure, or under it in a narrow column
      sameLineIfRoom(ImGui::CalcTextSize("on host").x, ImGui::CalcTextSize(" ").x);
      ImGui::TextUnformatted("on host");
      noteCell("host");
    }
    if (measure && measuring_[strategy] >= 0) measuredCell(measure(stats_[measuring_[strategy]]), predicted);
  }

  const std::vector<estimate::RunPrediction>& predictions_;
  const std::vector<int>& measuring_;
  const std::vector<std::vector<stats::RankStats>>& stats_;
};

void updatePredictions(EstimatePanelState& st, const config::RunConfig& config,
                       const std::vector<config::StrategyKind>& strategies) {
  const std::string key = config.toJson().dump() + std::to_string(strategies.size());
  if (key == st.predictedFor) return;
  st.predictedFor = key;
  st.predictions.clear();
  st.strategies = strategies;
  auto problem = estimate::predictionProblem(config);
  st.predictionProblem = problem ? *problem : std::string();
  if (problem) return;
  for (config::StrategyKind strategy : strategies) {
    config::RunConfig c = config;
    c.strategy = strategy;
    if (!config::traitsOf(strategy).replicatesShardGroups) c.shardGroupSize = 0;
    st.predictions.push_back(estimate::predictRun(c));
  }
}

void drawRunPrediction(EstimatePanelState& st, const config::RunConfig& config, const std::vector<Session>& sessions,
                       const std::vector<std::vector<stats::RankStats>>& stats) {
  if (config.pp > 1) {  // per pipeline rank, under the run's own strategy
    if (auto problem = estimate::predictionProblem(config)) {
      ImGui::TextColored(kMismatchColor, "no prediction: %s", problem->c_str());
      return;
    }
    predictionBadge();
    return drawPipelinePrediction(config, sessions, stats);
  }
  updatePredictions(st, config, predictedStrategies(config, sessions));
  if (!st.predictionProblem.empty()) {
    ImGui::TextColored(kMismatchColor, "no prediction: %s", st.predictionProblem.c_str());
    noteItem("estimate:run-problem");
    return;
  }
  const auto& predictions = st.predictions;
  const std::vector<config::StrategyKind>& shown = st.strategies;
  const int shownCount = static_cast<int>(shown.size());
  std::vector<int> measuring(shown.size());
  bool anyMeasured = false;
  for (int i = 0; i < shownCount; ++i) {
    measuring[i] = measuringSession(config, shown[i], sessions, stats);
    anyMeasured |= measuring[i] >= 0;
  }
  predictionBadge();
  const std::string trained =
      config.loraRank > 0 ? ", T = " + trace::formatCount(static_cast<double>(config::trainableElements(config))) +
                                " of them trained (LoRA adapters)"
                          : "";
  ImGui::TextWrapped(
      "per rank for %s, %d layers, hidden %d%s, world %d, %s, %s: P = %s parameters%s. Hover a "
      "figure for its formula.",
      config::modeName(config.model), config.layers, config.hidden, config::trainingLabel(config).c_str(), config.world,
      config::modeName(config.precision), config::modeName(config.optimizer),
      trace::formatCount(static_cast<double>(predictions[0].parameters)).c_str(), trained.c_str());
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("prediction", 1 + shownCount, flags)) return;
  ImGui::TableSetupColumn("per rank", ImGuiTableColumnFlags_WidthStretch, 1.6f);
  for (config::StrategyKind s : shown)
    ImGui::TableSetupColumn(config::strategyName(s), ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableHeadersRow();
  const PredictionTable table{predictions, measuring, stats};
  table.memoryRows();
  table.activationRow();
  table.collectiveRows();
  table.sentRow(config.world);
  ImGui::EndTable();
  noteItem("estimate:prediction-table");
  ImGui::TextDisabled(anyMeasured ? "\"= run\": the matching run's largest rank measured exactly the predicted bytes"
                                  : "measured: press Compare with this configuration to put the runs' figures here");
  // Under offload the device still holds a unit's shard and gradient shard for a moment (the copy in
  // for its all-gather, the reduced shard before its copy out): predicted for full_shard and
  // shard_grad_op (their rows above), not for the hybrid strategies or under LoRA.
  const char* unpredictedCopies = config.offload != config::Offload::Cpu ? ""
                                  : config.loraRank > 0 ? ", and under --offload cpu with LoRA the device's passing "
                                                          "copies of a unit's shard and gradient shard"
                                                        : ", and under --offload cpu the hybrid strategies' passing "
                                                          "copies of a unit's shard and gradient shard on the device";
  wrappedHint(
      "not predicted: the activation peak (backward's working memory), communication buffers, allocator "
      "overhead%s (see Comparison)",
      unpredictedCopies);
}

// A small button on the current line where it fits, else at the start of the next: a row of
// example buttons wraps in a narrow window instead of running off its edge.
bool smallButtonWrapping(const char* label, bool firstInRow) {
  if (!firstInRow) sameLineIfRoom(ImGui::CalcTextSize(label).x + 2.0f * ImGui::GetStyle().FramePadding.x);
  return ImGui::SmallButton(label);
}

void applyExample(EstimatePanelState& st, const SeedExample& e) {
  std::snprintf(st.parameters, sizeof st.parameters, "%s", e.parameters);
  std::snprintf(st.worlds, sizeof st.worlds, "%s", e.worlds);
  std::copy(std::begin(e.bytes), std::end(e.bytes), st.bytesPerParameter);
  st.gpuMemoryGB = 80;  // the examples are about 80 GB GPUs (A100 80 GB, H100)
  st.trainedPercent = e.trainedPercent;
  st.architecture = 0;
  const auto& presets = estimate::architecturePresets();
  for (size_t i = 0; e.architecture && i < presets.size(); ++i) {
    if (std::strcmp(presets[i].name, e.architecture) == 0) st.architecture = static_cast<int>(i) + 1;
  }
  st.recompute = e.recompute;
  st.microBatch = 1;
  st.activationPrecision = 0;
}

constexpr const char* kRecomputeNames[] = {"none", "selective", "full"};
constexpr const char* kActivationPrecisions[] = {"bf16", "fp32"};

// The transformer shape for activations per GPU: a preset, a custom L,H,A,S, or none. Choosing a
// preset also sets the parameter count (as `estimate --arch` does). Fills the case's activations,
// or says what is wrong.
std::optional<std::string> drawArchitectureInputs(EstimatePanelState& st, estimate::ModelStateCase& c) {
  const auto& presets = estimate::architecturePresets();
  const int custom = static_cast<int>(presets.size()) + 1;
  auto nameOf = [&](int i) -> const char* {
    if (i == 0) return "none (model states only)";
    return i == custom ? "custom L,H,A,S" : presets[static_cast<size_t>(i - 1)].name;
  };
  ImGui::PushItemWidth(px(190.0f));
  if (ImGui::BeginCombo("shape, for activations", nameOf(st.architecture))) {
    for (int i = 0; i <= custom; ++i) {
      if (ImGui::Selectable(nameOf(i), i == st.architecture)) {
        st.architecture = i;
        if (i > 0 && i < custom) {
          std::snprintf(st.parameters, sizeof st.parameters, "%s",
                        trace::formatCount(presets[static_cast<size_t>(i - 1)].parameters).c_str());
        }
      }
    }
    ImGui::EndCombo();
  }
  noteItem("estimate:arch");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "a transformer shape adds activations per GPU (Korthikanti et al. 2022, Table 2);\n"
        "a preset also sets the parameter count");
  }
  ImGui::PopItemWidth();
  st.activationBytes = 0;
  if (st.architecture == 0) return std::nullopt;
  if (st.architecture == custom) {
    ImGui::SameLine();
    ImGui::PushItemWidth(px(140.0f));
    ImGui::InputText("shape", st.customShape, sizeof st.customShape);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("layers,hidden,heads,sequence, e.g. 32,4096,32,4096");
    ImGui::PopItemWidth();
  }
  ImGui::PushItemWidth(px(90.0f));
  ImGui::InputInt("micro-batch", &st.microBatch);
  ImGui::SameLine();
  ImGui::Combo("recompute", &st.recompute, kRecomputeNames, IM_ARRAYSIZE(kRecomputeNames));
  ImGui::SameLine();
  ImGui::Combo("activations' dtype", &st.activationPrecision, kActivationPrecisions,
               IM_ARRAYSIZE(kActivationPrecisions));
  ImGui::PopItemWidth();
  const auto arch =
      st.architecture == custom
          ? estimate::parseArchitecture(st.customShape)
          : std::optional<estimate::ArchitecturePreset>(presets[static_cast<size_t>(st.architecture - 1)]);
  if (!arch)
    return "'" + std::string(st.customShape) + "' is not a shape: layers,hidden,heads,sequence, e.g. 32,4096,32,4096";
  if (st.microBatch < 1)
    return "micro-batch " + std::to_string(st.microBatch) + " is not a number of samples: 1 or more";
  auto shape = arch->shape;
  shape.microBatch = st.microBatch;
  const int e = *estimate::parseActivationPrecision(kActivationPrecisions[st.activationPrecision]);
  const auto recompute = *estimate::parseRecompute(kRecomputeNames[st.recompute]);
  c.activationBytes = estimate::transformerActivationBytes(shape, recompute, e);
  st.activationBytes = c.activationBytes;
  wrappedHint(
      "activations per GPU %s, any N: per layer %s (Korthikanti et al. 2022, dropout and attention "
      "scores kept)%s",
      trace::formatDecimalGB(c.activationBytes).c_str(), estimate::transformerActivationFormula(recompute, e).c_str(),
      arch->gptLayer ? "" : "; for Llama's layer an approximation");
  return std::nullopt;
}

// The other inverse question: the largest model whose model states fit each GPU count.
void drawLargestModels(EstimatePanelState& st, const estimate::ModelStateCase& c) {
  st.largestModels.clear();
  for (int n : c.worlds) {
    std::string line = std::to_string(n) + (n == 1 ? " GPU:" : " GPUs:");
    for (const auto& s : estimate::modelStateStrategies()) {
      line += " " + std::string(s.name) + " " + trace::formatCount(estimate::largestModel(c, s, n)) + ",";
    }
    line.pop_back();
    st.largestModels += (st.largestModels.empty() ? "" : "; ") + line;
  }
  ImGui::TextWrapped("largest model whose model states fit: %s", st.largestModels.c_str());
  noteItem("estimate:largest");
}

// The seed documents' examples as buttons, and the what-if's own fields.
void drawWhatIfInputs(EstimatePanelState& st) {
  bool first = true;
  for (const auto& e : kSeedExamples) {
    const bool clicked = smallButtonWrapping(e.label, first);
    first = false;
    noteItem(e.probeName);
    if (clicked) applyExample(st, e);
  }
  if (smallButtonWrapping("bf16 + fp32 Adam: 2,2,12", false)) {
    st.bytesPerParameter[0] = 2, st.bytesPerParameter[1] = 2, st.bytesPerParameter[2] = 12;
  }
  ImGui::PushItemWidth(px(90.0f));
  ImGui::InputText("parameters", st.parameters, sizeof st.parameters);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("e.g. 7B, 70B, 1.3e9");
  ImGui::SameLine();
  ImGui::InputText("GPUs", st.worlds, sizeof st.worlds);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("GPU counts, e.g. 1,8,16");
  ImGui::SameLine();
  ImGui::InputFloat("GB per GPU", &st.gpuMemoryGB, 0, 0, "%.0f");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("one GPU's memory in GB (10^9 B); 0: no verdict");
  ImGui::PopItemWidth();
  ImGui::PushItemWidth(px(200.0f));
  ImGui::InputFloat3("bytes per parameter: weights, gradients, optimizer", st.bytesPerParameter, "%.1f");
  ImGui::PopItemWidth();
  ImGui::PushItemWidth(px(90.0f));
  ImGui::InputFloat("% of the parameters trained", &st.trainedPercent, 0, 0, "%.2f");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "the share of the parameters that trains: 100 for full fine-tuning; LoRA's adapters\n"
        "are well under 1 %%. Only they have gradients and optimizer state.");
  }
  ImGui::SameLine();
  ImGui::InputFloat("% kept free", &st.reservePercent, 0, 0, "%.0f");
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip(
        "a share of each GPU kept free for what the table leaves out (buffers, the CUDA\n"
        "context, fragmentation): verdicts and inverse answers use the rest");
  }
  ImGui::PopItemWidth();
}

// Why the what-if's fields make no case, or "".
std::string whatIfProblem(const EstimatePanelState& st, const std::optional<double>& parameters, bool worldsRead,
                          const std::optional<std::string>& shapeProblem) {
  std::string problem;
  if (!parameters)
    problem = "'" + std::string(st.parameters) + "' is not a parameter count: e.g. 7B, 70B or 1.3e9";
  else if (!worldsRead)
    problem = "'" + std::string(st.worlds) + "' is not a list of GPU counts: e.g. 1,8,16";
  else if (st.bytesPerParameter[0] < 0 || st.bytesPerParameter[1] < 0 || st.bytesPerParameter[2] < 0)
    problem = "bytes per parameter cannot be negative";
  else if (st.gpuMemoryGB < 0)
    problem = "GPU memory cannot be negative: 0 turns the verdict off";
  else if (!(st.trainedPercent > 0 && st.trainedPercent <= 100))
    problem = "% trained must be above 0 and at most 100 (100: full fine-tuning; LoRA e.g. 0.5)";
  else if (!(st.reservePercent >= 0 && st.reservePercent < 100))
    problem = "% kept free must be 0 or more and below 100 (e.g. 10)";
  else if (shapeProblem)
    problem = *shapeProblem;
  return problem;
}

// Each strategy and world size as a bar of its model states (and activations), the GPU's memory
// a red line across them.
void drawWhatIfBars(const estimate::ModelStateCase& c, const std::vector<estimate::ModelStateRow>& rows) {
  double scale = std::max(c.gpuMemoryBytes, 1.0);  // all zero is allowed: keep the bars finite
  for (const auto& r : rows) scale = std::max(scale, r.total());
  const float labelWidth = px(350.0f);
  const float barWidth = std::max(ImGui::GetContentRegionAvail().x - labelWidth - 8.0f, 80.0f);
  const float barHeight = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 2.0f));
  for (const auto& r : rows) {
    ImGui::Text("%-15s x%-3d %9s", r.strategy.c_str(), r.world, trace::formatDecimalGB(r.total()).c_str());
    if (c.gpuMemoryBytes > 0) {
      ImGui::SameLine();
      ImGui::TextColored(r.fits ? kMatchColor : kMismatchColor, r.fits ? "fits" : "does NOT fit");
    }
    ImGui::SameLine(labelWidth);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(p, ImVec2(p.x + barWidth, p.y + barHeight), IM_COL32(30, 32, 36, 255));
    float x = p.x;
    const std::pair<double, MemoryRole> parts[] = {{r.weights, MemoryRole::ParamShard},
                                                   {r.gathered, MemoryRole::ParamGathered},
                                                   {r.grads, MemoryRole::GradShard},
                                                   {r.optimizer, MemoryRole::OptimizerState},
                                                   {r.activations, MemoryRole::Activation}};
    for (const auto& [bytes, role] : parts) {
      const float w = static_cast<float>(bytes / scale) * barWidth;
      dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + w, p.y + barHeight), roleColor(role));
      x += w;
    }
    if (c.gpuMemoryBytes > 0) {
      const float gx = p.x + static_cast<float>(c.gpuMemoryBytes / scale) * barWidth;
      dl->AddLine(ImVec2(gx, p.y - 2), ImVec2(gx, p.y + barHeight + 2), IM_COL32(255, 80, 80, 255), 2.0f);
      if (c.reserve > 0) {  // the budget the verdict uses, dashed short of the line
        const float bx = p.x + static_cast<float>(c.budgetBytes() / scale) * barWidth;
        dl->AddLine(ImVec2(bx, p.y), ImVec2(bx, p.y + barHeight), IM_COL32(255, 160, 120, 200), 1.0f);
      }
    }
    ImGui::Dummy(ImVec2(barWidth, barHeight));
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("weights %s, gathered %s, gradients %s, optimizer %s, activations %s",
                        trace::formatDecimalGB(r.weights).c_str(), trace::formatDecimalGB(r.gathered).c_str(),
                        trace::formatDecimalGB(r.grads).c_str(), trace::formatDecimalGB(r.optimizer).c_str(),
                        trace::formatDecimalGB(r.activations).c_str());
    }
  }
  ImGui::PopStyleVar();
}

void drawWhatIf(EstimatePanelState& st) {
  predictionBadge();
  ImGui::TextWrapped(
      "Will it fit? Model-state memory per GPU, as the seed documents tabulate it (activations too, "
      "given a shape).");
  drawWhatIfInputs(st);
  estimate::ModelStateCase c;
  const auto shapeProblem = drawArchitectureInputs(st, c);
  const auto parameters = estimate::parseCount(st.parameters);
  const auto worlds = estimate::parseWorlds(st.worlds);
  if (const std::string problem = whatIfProblem(st, parameters, worlds.has_value(), shapeProblem); !problem.empty()) {
    ImGui::TextColored(kMismatchColor, "%s", problem.c_str());
    noteItem("estimate:problem");
    return;
  }
  c.parameters = *parameters;
  c.worlds = *worlds;
  c.bytes = {st.bytesPerParameter[0], st.bytesPerParameter[1], st.bytesPerParameter[2]};
  c.gpuMemoryBytes = st.gpuMemoryGB * 1e9;
  c.trainedFraction = st.trainedPercent / 100.0;
  c.reserve = st.reservePercent / 100.0;
  drawWhatIfBars(c, estimate::modelStateTable(c));
  // The inverse question for this model: how many GPUs of this memory each strategy needs.
  st.fewestGpus.clear();
  if (c.gpuMemoryBytes > 0) {
    for (const auto& s : estimate::modelStateStrategies()) {
      const auto n = estimate::fewestGpus(c, s);
      st.fewestGpus +=
          (st.fewestGpus.empty() ? "" : ", ") + std::string(s.name) + " " + (n ? std::to_string(*n) : "none");
    }
    ImGui::TextWrapped("fewest GPUs of %s%s: %s", trace::formatDecimalGB(c.gpuMemoryBytes).c_str(),
                       c.activationBytes > 0 ? " (model states and activations)" : "", st.fewestGpus.c_str());
    noteItem("estimate:fewest");
    drawLargestModels(st, c);
  }
  wrappedHint(
      "blue weights, orange gathered, green gradients, purple optimizer%s; red line: %.0f GB "
      "(GB = 10^9 B)%s.%s",
      c.activationBytes > 0 ? ", then activations" : "", st.gpuMemoryGB,
      c.reserve > 0 ? ", thin line: what is left after the share kept free" : "",
      c.activationBytes > 0 ? "" : " Activations not included: choose a shape above.");
}

}  // namespace

void drawEstimatePanel(EstimatePanelState& state, const config::RunConfig& config, const std::vector<Session>& sessions,
                       const std::vector<std::vector<stats::RankStats>>& stats) {
  // Side by side where the run's table keeps room for five columns of figures; else (a narrower
  // window, projector text) one above the other, so that neither is cut off.
  if (ImGui::GetContentRegionAvail().x < px(kSideBySideWidth)) {
    drawRunPrediction(state, config, sessions, stats);
    ImGui::Separator();
    drawWhatIf(state);
    return;
  }
  if (!ImGui::BeginTable("estimate", 2, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("this run", ImGuiTableColumnFlags_WidthStretch, 1.15f);
  ImGui::TableSetupColumn("will it fit", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  drawRunPrediction(state, config, sessions, stats);
  ImGui::TableNextColumn();
  drawWhatIf(state);
  ImGui::EndTable();
}

bool applyWhatIfExample(EstimatePanelState& state, const std::string& name) {
  for (const auto& e : kSeedExamples) {
    if (std::string("estimate:") + name == e.probeName) {
      applyExample(state, e);
      return true;
    }
  }
  return false;
}

}  // namespace shardscope::ui
