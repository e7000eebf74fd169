#include "app/schedule_command.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "config/pipeline_config.h"
#include "config/pipeline_transfers.h"

namespace shardscope::app {

namespace {

// "stage 0 on ranks 0-1: embedding, blocks.0-1" for each stage.
void printSplit(const config::RunConfig& config, const config::PipelineShape& shape) {
  const auto split = config::stageBlocks(config.layers, shape.stages());
  for (int k = 0; k < shape.stages(); ++k) {
    std::string held = k != 0 ? "" : config.model == config::ModelKind::Gpt ? "embedding, " : "input layer, ";
    const auto& blocks = split[k];
    held += blocks.count == 1
                ? "blocks." + std::to_string(blocks.first)
                : "blocks." + std::to_string(blocks.first) + "-" + std::to_string(blocks.first + blocks.count - 1);
    if (k == shape.stages() - 1) held += ", head and loss";
    // The stage's ranks: its pipe rank's block of world / P consecutive ranks.
    const int block = config.world / shape.ranks, first = config::rankOfStage(shape, k) * block;
    const std::string ranks = block == 1 ? "rank " + std::to_string(first)
                                         : "ranks " + std::to_string(first) + "-" + std::to_string(first + block - 1);
    std::printf("stage %d on %s: %s\n", k, ranks.c_str(), held.c_str());
  }
}

// The plan's bubble with F = 1, B = 2 (I = W = 1): per rank, the time with no action running over
// the makespan, the largest of them printed.
void printBubble(const config::PipelineShape& shape) {
  const auto form = config::bubbleClosedForm(shape);
  std::printf("bubble (PREDICTION, closed form %s): %.1f%% of the ideal time\n", form.form.c_str(),
              100 * form.fraction);
  const auto plan = config::plannedTimeline(shape, {});
  if (!plan) return;
  double makespan = 0, busiest = 0;
  for (const auto& rank : *plan) {
    double busy = 0;
    for (const auto& a : rank) busy += a.end - a.start;
    makespan = std::max(makespan, rank.empty() ? 0.0 : rank.back().end);
    busiest = std::max(busiest, busy);
  }
  if (makespan > 0) {
    std::printf(
        "bubble (PREDICTION, the plan laid out with F = 1, B = 2, I = W = 1): %.1f%% of the step on the busiest rank\n",
        100 * (1 - busiest / makespan));
  }
}

}  // namespace

void printPipelinePlan(const config::RunConfig& config) {
  const auto shape = config::pipelineShapeOf(config);
  std::printf("pipeline: %s, %d micro-batches of %d samples per data rank; mesh %d pipe x %d data x %d tensor\n",
              config::modeName(shape.schedule), shape.microBatches,
              config.batch / config::dataRankCount(config) / shape.microBatches, shape.ranks,
              config::dataRankCount(config), std::max(1, config.tp));
  printSplit(config, shape);
}

int printPipelineSchedule(const config::RunConfig& config) {
  if (config.pp < 2) {
    std::fprintf(stderr,
                 "shardscope: --print-schedule prints a pipeline's schedule, but --pp is %d. Pass --pp 2 or more "
                 "(e.g. --pp 2 --schedule 1f1b).\n",
                 config.pp);
    return 2;
  }
  const auto shape = config::pipelineShapeOf(config);
  std::printf("schedule %s: P = %d ranks, V = %d stages per rank, M = %d micro-batches\n",
              config::modeName(shape.schedule), shape.ranks, shape.stagesPerRank, shape.microBatches);
  printSplit(config, shape);
  std::fputs(config::scheduleText(shape).c_str(), stdout);
  printBubble(shape);
  return 0;
}

}  // namespace shardscope::app
