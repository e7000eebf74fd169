#include "estimate/pipeline_report.h"

#include <nlohmann/json.hpp>

#include "config/strategies.h"
#include "files/user_json.h"
#include "estimate/pipeline_prediction.h"
#include "trace/format.h"

namespace shardscope::estimate {

using trace::formatBytes;

namespace {

std::string stagesText(const std::vector<int>& stages) {
  std::string text;
  for (int s : stages) text += (text.empty() ? "" : ",") + std::to_string(s);
  return text;
}

void printPipelineJson(std::FILE* out, const config::RunConfig& config, const PipelinePrediction& p) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks) {
    ranks.push_back({{"pipe_rank", r.pipeRank},
                     {"stages", r.stages},
                     {"parameters", r.parameters},
                     {"model_state_bytes", r.modelStateBytes},
                     {"microbatches_held_peak", r.peakMicroBatches},
                     {"stage_microbatches_held_peak", r.peakStageMicroBatches},
                     {"activation_bytes", config.model == config::ModelKind::Gpt ? nlohmann::json(r.activationBytes)
                                                                                 : nlohmann::json(nullptr)},
                     {"sent_bytes_per_step", r.sentBytesPerStep}});
  }
  const nlohmann::json j = {{"prediction", true},
                            {"schedule", config::modeName(p.shape.schedule)},
                            {"pp", p.shape.ranks},
                            {"stages_per_rank", p.shape.stagesPerRank},
                            {"microbatches", p.shape.microBatches},
                            {"strategy", config::strategyName(config.strategy)},
                            {"bubble_over_ideal", p.bubble.fraction},
                            {"bubble_form", p.bubble.form},
                            {"message_bytes", p.messageBytes},
                            {"ranks", ranks}};
  std::fprintf(out, "%s\n", j.dump(2).c_str());
}

}  // namespace

void printPipelinePrediction(std::FILE* out, const config::RunConfig& config, bool json) {
  const PipelinePrediction p = predictPipeline(config);
  if (json) return printPipelineJson(out, config, p);
  std::fprintf(out,
               "shardscope estimate: a PREDICTION of each pipeline rank of this run (nothing was run or "
               "measured)\n%s, P = %d, V = %d, M = %d; %s over each stage's %d data rank(s)\n\n",
               config::modeName(p.shape.schedule), p.shape.ranks, p.shape.stagesPerRank, p.shape.microBatches,
               config::strategyName(config.strategy), config::dataRankCount(config));
  std::fprintf(out, "%-9s %-8s %12s %14s %22s %16s\n", "pipe rank", "stages", "parameters", "model states",
               "activations held (max)", "sent/step");
  for (const auto& r : p.ranks) {
    // Micro-batches held, and (stage, micro-batch) pairs where a rank's stages hold one twice.
    const std::string count =
        std::to_string(r.peakMicroBatches) + " mb" +
        (r.peakStageMicroBatches != r.peakMicroBatches ? ", " + std::to_string(r.peakStageMicroBatches) + " stage-mb"
                                                       : "");
    const std::string held = config.model == config::ModelKind::Gpt
                                 ? formatBytes(static_cast<double>(r.activationBytes)) + " (" + count + ")"
                                 : count;
    std::fprintf(out, "%-9d %-8s %12lld %14s %22s %16s\n", r.pipeRank, stagesText(r.stages).c_str(),
                 static_cast<long long>(r.parameters), formatBytes(static_cast<double>(r.modelStateBytes)).c_str(),
                 held.c_str(), formatBytes(static_cast<double>(r.sentBytesPerStep)).c_str());
  }
  std::fprintf(out,
               "\nmodel states: the strategy's prediction for the whole model at one stage's ranks, times the "
               "rank's share of the parameters\nactivations held: the most (stage, micro-batch) activations "
               "the schedule's own action list keeps at once, each a stage's share of one micro-batch's%s\n"
               "sent/step: each send of the action list, %s (one micro-batch's activation or its gradient)\n"
               "bubble: %s = %.1f%% of the ideal time (the closed form)\n",
               config.model == config::ModelKind::Gpt ? " (docs/estimate.md's activation count)" : " (mlp: not sized)",
               formatBytes(static_cast<double>(p.messageBytes)).c_str(), p.bubble.form.c_str(),
               100 * p.bubble.fraction);
}

void printLayouts(std::FILE* out, const ModelStateCase& c, int gpus, int microBatches, bool json) {
  const auto layouts = predictLayouts(c.parameters, c.bytes.weights, c.bytes.grads, c.bytes.optimizer, gpus,
                                      microBatches, c.activationBytes);
  const double budget = c.budgetBytes();
  const auto fits = [&](double bytes) { return budget <= 0 || bytes <= budget; };
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& l : layouts) {
      rows.push_back({{"pp", l.pp},
                      {"dp", l.dp},
                      {"tp", l.tp},
                      {"zero1_bytes", l.zero1Bytes},
                      {"full_shard_bytes", l.fullShardBytes},
                      {"activation_bytes", l.activationBytes},
                      {"bubble_over_ideal", l.bubbleOverIdeal},
                      {"zero1_fits", fits(l.zero1Bytes + l.activationBytes)},
                      {"full_shard_fits", fits(l.fullShardBytes + l.activationBytes)}});
    }
    std::fprintf(out, "%s\n", nlohmann::json{{"prediction", true}, {"gpus", gpus}, {"layouts", rows}}.dump(2).c_str());
    return;
  }
  std::fprintf(out,
               "shardscope estimate: a PREDICTION of every (pp, dp, tp) layout of %d GPUs for %s parameters at "
               "%s per parameter, M = %d micro-batches (nothing was run or measured)\n\n",
               gpus, trace::formatCount(c.parameters).c_str(),
               (files::shownNumber(c.bytes.weights) + "+" + files::shownNumber(c.bytes.grads) + "+" +
                files::shownNumber(c.bytes.optimizer) + " B")
                   .c_str(),
               microBatches);
  std::fprintf(out, "%4s %4s %4s %16s %16s %14s %10s\n", "pp", "dp", "tp", "zero1 states", "full_shard", "activations",
               "bubble");
  for (const auto& l : layouts) {
    const auto cell = [&](double states) {
      return formatBytes(states) + (fits(states + l.activationBytes) ? "  " : " x");
    };
    std::fprintf(out, "%4d %4d %4d %16s %16s %14s %9.1f%%\n", l.pp, l.dp, l.tp, cell(l.zero1Bytes).c_str(),
                 cell(l.fullShardBytes).c_str(), c.activationBytes > 0 ? formatBytes(l.activationBytes).c_str() : "-",
                 100 * l.bubbleOverIdeal);
  }
  std::fprintf(
      out,
      "\nper GPU: each stage's share of the model (P stages) split t ways; zero1 (Megatron's distributed "
      "optimizer): weights and gradients whole, optimizer state / dp; full_shard (FSDP per stage): all "
      "/ dp, the units being gathered left out\nactivations (--arch): 1F1B's first stage, P micro-batches "
      "of its L/P layers, about one micro-batch's whole, / t; bubble: (P-1)/M of the ideal time (pp up to M: 1F1B "
      "needs M >= P)\n"
      "x: does not fit one GPU's %s%s\n",
      formatBytes(c.gpuMemoryBytes).c_str(), budget > 0 ? "" : " (no --gpu-memory: no verdict)");
}

}  // namespace shardscope::estimate
