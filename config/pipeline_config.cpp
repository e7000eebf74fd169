#include "config/pipeline_config.h"

#include "config/model_layout.h"
#include "config/modes.h"

#include <algorithm>

namespace shardscope::config {

namespace {

std::string pp(const RunConfig& c) { return "--pp " + std::to_string(c.pp); }

// Options that only a pipeline reads, given without one.
std::optional<std::string> pipelineOptionsAlone(const RunConfig& c) {
  if (c.microbatches != 0) {
    return "--microbatches " + std::to_string(c.microbatches) +
           " splits a pipeline's batch, but --pp is 1. Pass --pp 2 or more, or use --accumulate for gradient "
           "accumulation without a pipeline.";
  }
  if (c.stagesPerRank != 0) {
    return "--stages-per-rank " + std::to_string(c.stagesPerRank) +
           " places several pipeline stages on each rank, but --pp is 1. Pass --pp 2 or more, or drop it.";
  }
  return std::nullopt;
}

// What the pipeline does not combine with yet.
std::optional<std::string> pipelineCombinations(const RunConfig& c) {
  if (c.accumulate != 1) {
    return pp(c) + " with --accumulate " + std::to_string(c.accumulate) +
           ": a pipeline accumulates over its micro-batches already. Drop --accumulate and pass --microbatches.";
  }
  if (c.loraRank > 0) {
    return pp(c) +
           " with --lora-rank: shardscope does not yet train LoRA adapters through a pipeline. Drop one "
           "of them.";
  }
  return std::nullopt;
}

// The number of micro-batches against the batch and the schedule.
std::optional<std::string> microBatchProblem(const RunConfig& c, const PipelineShape& shape) {
  if (c.batch % dataRankCount(c) != 0) return std::nullopt;  // the batch's own split says it first
  const int local = c.batch / dataRankCount(c);
  const std::string m = "--microbatches " + std::to_string(shape.microBatches);
  if (local % shape.microBatches != 0) {
    return m + " does not divide a data rank's batch of " + std::to_string(local) + " (--batch " +
           std::to_string(c.batch) + " over " + std::to_string(dataRankCount(c)) +
           " data ranks). Pass a --microbatches that divides it, or a --batch of " +
           std::to_string(dataRankCount(c) * shape.microBatches * std::max(1, local / shape.microBatches)) + ".";
  }
  if (shape.schedule == PipelineSchedule::OneFOneB && shape.microBatches < shape.ranks) {
    return m + " with --schedule 1f1b over " + pp(c) +
           ": 1F1B needs at least one micro-batch per stage, as "
           "PyTorch's Schedule1F1B does. Pass --microbatches " +
           std::to_string(shape.ranks) + " or more.";
  }
  return pipelineShapeProblem(shape);
}

}  // namespace

std::string pipelineLabel(const RunConfig& config) {
  if (config.pp <= 1) return "";
  const PipelineShape shape = pipelineShapeOf(config);
  return ", pipeline " + std::string(modeName(config.schedule)) + " over " + std::to_string(shape.stages()) +
         " stages, " + std::to_string(shape.microBatches) + " micro-batches";
}

PipelineShape pipelineShapeOf(const RunConfig& c) {
  PipelineShape shape;
  shape.schedule = c.schedule;
  shape.ranks = std::max(1, c.pp);
  shape.stagesPerRank = c.stagesPerRank > 0 ? c.stagesPerRank : (loopsOverStages(c.schedule) ? 2 : 1);
  shape.microBatches = c.microbatches > 0 ? c.microbatches : (loopsOverStages(c.schedule) ? 2 : 1) * shape.ranks;
  return shape;
}

std::optional<std::string> pipelineProblem(const RunConfig& c) {
  if (c.pp == 1) return pipelineOptionsAlone(c);
  const int tp = std::max(1, c.tp);
  if (c.pp < 1 || c.world % (c.pp * tp) != 0) {
    return pp(c) + " does not divide --world " + std::to_string(c.world) +
           (tp > 1 ? " with --tp " + std::to_string(tp) : std::string()) +
           ": the world is pp x dp x tp ranks. Pass a --pp that divides " + std::to_string(c.world / tp) +
           ", or a --world that " + pp(c) + (tp > 1 ? " x --tp" : "") + " divides.";
  }
  if (auto e = pipelineCombinations(c)) return e;
  const PipelineShape shape = pipelineShapeOf(c);
  if (c.layers < shape.stages()) {
    return pp(c) + (shape.stagesPerRank > 1 ? " x --stages-per-rank " + std::to_string(shape.stagesPerRank) : "") +
           " makes " + std::to_string(shape.stages()) + " stages, but --layers " + std::to_string(c.layers) +
           " gives only " + std::to_string(c.layers) + " blocks to split among them. Pass --layers " +
           std::to_string(shape.stages()) + " or more.";
  }
  return microBatchProblem(c, shape);
}

PipelinePlace pipelinePlace(int rank, int worldSize, int pipeRanks) {
  const int stageRanks = std::max(1, worldSize / std::max(1, pipeRanks));
  return {rank / stageRanks, rank % stageRanks, stageRanks};
}

int dataRankCount(const RunConfig& c) { return std::max(1, c.world / std::max(1, c.tp) / std::max(1, c.pp)); }

std::vector<int64_t> boundaryShape(const RunConfig& c, int64_t rows) {
  if (c.model == ModelKind::Mlp) return {rows, c.hidden};
  const int64_t tokens = c.sequenceParallel ? c.seq / std::max(1, c.tp) : c.seq;
  return {rows, tokens, c.hidden};
}

std::vector<RunConfig> underEachSchedule(const RunConfig& base, const std::vector<PipelineSchedule>& schedules) {
  if (schedules.empty()) return {base};
  int microbatches = base.microbatches;
  for (PipelineSchedule schedule : schedules) {
    RunConfig c = base;
    c.schedule = schedule;
    c.stagesPerRank = 0;
    if (base.microbatches == 0) microbatches = std::max(microbatches, pipelineShapeOf(c).microBatches);
  }
  std::vector<RunConfig> runs;
  for (PipelineSchedule schedule : schedules) {
    RunConfig c = base;
    c.schedule = schedule;
    c.microbatches = microbatches;
    if (!loopsOverStages(schedule)) c.stagesPerRank = 0;
    runs.push_back(c);
  }
  return runs;
}

std::vector<int> stageOfEachParameter(const std::vector<ParamSpec>& params, int blocks, int stages) {
  const auto split = stageBlocks(blocks, stages);
  std::vector<int> out;
  bool blocksBegun = false;
  for (const auto& p : params) {
    if (p.unit == kRootUnit) {
      out.push_back(blocksBegun ? stages - 1 : 0);
      continue;
    }
    blocksBegun = true;
    int stage = 0;
    while (stage + 1 < stages && p.unit >= split[static_cast<size_t>(stage + 1)].first) ++stage;
    out.push_back(stage);
  }
  return out;
}

}  // namespace shardscope::config
