// The Estimate tab under --pp: each pipeline rank's predicted model states, activations held and
// bytes sent to other stages (estimate/pipeline_prediction.h), beside what a matching run measured,
// and the bubble's closed form beside the measured bubble.
#pragma once

#include <vector>

#include "config/run_config.h"
#include "stats/run_stats.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// The session that measured `config`'s pipeline (the same model, world, strategy and pipeline
// shape), or -1.
int measuringPipelineSession(const config::RunConfig& config, const std::vector<Session>& sessions,
                             const std::vector<std::vector<stats::RankStats>>& stats);

void drawPipelinePrediction(const config::RunConfig& config, const std::vector<Session>& sessions,
                            const std::vector<std::vector<stats::RankStats>>& stats);

}  // namespace shardscope::ui
