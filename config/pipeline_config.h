// What --pp and its options make of a run: the pipeline's shape with its defaults resolved, and where a rank sits in
// the (pp, dp, tp) mesh, laid out as torchtitan lays it out: rank = pp_index * (dp * tp) + dp_index * tp + tp_index, so
// each pipeline stage's ranks are one contiguous block of the world, with its own (data, tensor) grid inside.
// validate()'s checks of them (pipelineProblem) and the data ranks (dataRankCount) are declared
// with it in run_config.h and defined here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/pipeline_schedule.h"
#include "config/run_config.h"

namespace shardscope::config {

struct ParamSpec;  // config/model_layout.h

// The schedule, P, V and M of `config`, with V's default (1, or 2 for the schedules that loop)
// and M's (P, or 2P for those) filled in.
PipelineShape pipelineShapeOf(const RunConfig& config);
// ", pipeline gpipe over 4 stages, 8 micro-batches" under --pp; "" otherwise: a run's details line.
std::string pipelineLabel(const RunConfig& config);

// Where a rank sits in the (pp, dp, tp) mesh.
struct PipelinePlace {
  int pipeRank = 0;    // its pipeline index: which stages it holds
  int stageRank = 0;   // its rank among its stage's ranks (rank % (world / P))
  int stageRanks = 1;  // world / P: the ranks of one stage, a (data, tensor) grid
};
PipelinePlace pipelinePlace(int rank, int worldSize, int pipeRanks);

// The pipeline stage that holds each of `params` (a model's, in its order) split into `stages`
// over its `blocks`: a block's with its stage (config::stageBlocks), the root's listed before the
// blocks (the embedding, the input layer) with the first stage, the rest (final norm, head) with
// the last. The engine slices the model by it; the estimator counts each rank's share by it.
std::vector<int> stageOfEachParameter(const std::vector<ParamSpec>& params, int blocks, int stages);

// The shape of what crosses between two stages for a micro-batch of `rows` samples: a block's
// output ([rows, seq, hidden] for gpt, its sequence split under --sequence-parallel;
// [rows, hidden] for the mlp).
std::vector<int64_t> boundaryShape(const RunConfig& config, int64_t rows);

}  // namespace shardscope::config
