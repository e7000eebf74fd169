#include "config/pipeline_batches.h"

namespace shardscope::config {

namespace {

using Kind = PipeActionKind;

bool isSend(const PipeAction& a) { return a.kind == Kind::SendActivation || a.kind == Kind::SendGradient; }
bool isReceive(const PipeAction& a) { return a.kind == Kind::RecvActivation || a.kind == Kind::RecvGradient; }

}  // namespace

bool sendThenReceive(const PipeAction& action, const PipeAction& next) { return isSend(action) && isReceive(next); }

std::vector<std::vector<bool>> batchedTransfers(const PipelineShape& shape) {
  std::vector<std::vector<bool>> batched;
  for (const auto& list : everyRanksActions(shape)) {
    batched.emplace_back(list.size(), false);
    if (loopsOverStages(shape.schedule)) continue;
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      // A pair, not a chain: the receive of one batch is no send that starts the next.
      batched.back()[i] = sendThenReceive(list[i], list[i + 1]) && (i == 0 || !batched.back()[i - 1]);
    }
  }
  return batched;
}

}  // namespace shardscope::config
