// The Memory tab's activations of a pipeline run (--pp) at the playhead, each micro-batch apart:
// per rank, a bar of the activation role's bytes, a part per micro-batch whose activations the
// rank holds there (what its forwards left held, by the allocator's count: stats::
// activationBytesHeldAt), in its action cells' colour, and the rest in the role's own colour (what
// the running action holds, and the received inputs and gradients: a receive's buffer is allocated
// when it is posted, outside every forward); the figures beside it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ui/pipeline_lanes.h"
#include "ui/session_store.h"

namespace shardscope::ui {

// "mb0 548.2 KiB, mb1 548.2 KiB; 96.0 KiB besides (...)": each micro-batch of `held` ((stage,
// micro-batch) -> bytes, summed over its stages) and the rest of the role's `activation` bytes.
std::string activationSplitText(const std::map<std::pair<int, int>, int64_t>& held, int64_t activation);

// The Memory tab's rows at `tNs` (from the recording's origin, as the playhead), one per rank:
// nothing where the session ran no pipeline. Returns each rank's text (activationSplitText).
std::vector<std::string> drawActivationsByMicroBatch(const Session& session, const PipelineLanes& lanes, double tNs);

}  // namespace shardscope::ui
