// The Memory tab's activations of a pipeline run (--pp) at the playhead, each micro-batch apart:
// per rank, a bar of the activation role's bytes, a part per micro-batch whose activations the
// rank holds there (what its forwards left held, by the allocator's count: stats::
// activationBytesHeldAt), in its action cells' colour, and the rest (what the running action or a
// posted receive holds) in the role's own colour; the figures beside it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "ui/pipeline_lanes.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// "mb0 548.2 KiB, mb1 548.2 KiB; 96.0 KiB besides (...)": each micro-batch of `held` ((stage,
// micro-batch) -> bytes, summed over its stages) and the rest of the role's `activation` bytes.
std::string activationSplitText(const std::map<std::pair<int, int>, int64_t>& held, int64_t activation);

// Nothing where the session ran no pipeline or recorded no memory. Returns the ranks drawn.
int drawActivationsByMicroBatch(const Session& session, const PipelineLanes& lanes, double tNs);

}  // namespace shardscope::ui
