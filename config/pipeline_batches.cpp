#include "config/pipeline_batches.h"

#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace shardscope::config {

namespace {

using Kind = PipeActionKind;
using Lists = std::vector<std::vector<PipeAction>>;
using Message = std::tuple<int, int, int, int>;  // (from rank, to rank, stage it leaves, micro-batch x kind)

bool isSend(const PipeAction& a) { return a.kind == Kind::SendActivation || a.kind == Kind::SendGradient; }
bool isReceive(const PipeAction& a) { return a.kind == Kind::RecvActivation || a.kind == Kind::RecvGradient; }

// The message a transfer of rank `r` sends or receives, the same on both ends.
Message messageOf(const PipelineShape& shape, int r, const PipeAction& a) {
  const int to = isSend(a) ? rankOfStage(shape, carriesGradient(a) ? a.stage - 1 : a.stage + 1) : r;
  const int from = isSend(a) ? r : rankOfStage(shape, sendingStage(a));
  return {from, to, sendingStage(a), a.microBatch * 2 + (carriesGradient(a) ? 1 : 0)};
}

// The lists walked rank by rank until none moves: a lone send posts and goes on, a lone receive
// waits for its send, a batch for its send's receive and its receive's send. Where a rank stops
// at a batch: that rank and index; nothing where every rank ran to its end.
std::optional<std::pair<int, size_t>> stuckBatch(const PipelineShape& shape, const Lists& lists,
                                                 const std::vector<std::vector<bool>>& batched) {
  std::set<Message> sends, receives;
  std::vector<size_t> at(lists.size(), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t r = 0; r < lists.size(); ++r) {
      const auto& list = lists[r];
      for (size_t& i = at[r]; i < list.size(); moved = true) {
        const int rank = static_cast<int>(r);
        if (batched[r][i]) {
          const Message out = messageOf(shape, rank, list[i]), in = messageOf(shape, rank, list[i + 1]);
          sends.insert(out);
          receives.insert(in);
          if (!receives.count(out) || !sends.count(in)) break;
          i += 2;
          continue;
        }
        if (isSend(list[i])) sends.insert(messageOf(shape, rank, list[i]));
        if (isReceive(list[i])) {
          receives.insert(messageOf(shape, rank, list[i]));
          if (!sends.count(messageOf(shape, rank, list[i]))) break;
        }
        ++i;
      }
    }
  }
  for (size_t r = 0; r < lists.size(); ++r) {
    if (at[r] < lists[r].size() && batched[r][at[r]]) return std::pair{static_cast<int>(r), at[r]};
  }
  return std::nullopt;
}

}  // namespace

bool sendThenReceive(const PipeAction& action, const PipeAction& next) { return isSend(action) && isReceive(next); }

std::vector<std::vector<bool>> batchedTransfers(const PipelineShape& shape) {
  Lists lists;
  std::vector<std::vector<bool>> batched;
  for (int r = 0; r < shape.ranks; ++r) {
    lists.push_back(rankActions(shape, r));
    const auto& list = lists.back();
    batched.emplace_back(list.size(), false);
    for (size_t i = 0; i + 1 < list.size(); ++i) {
      // A pair, not a chain: the receive of one batch is no send that starts the next.
      batched.back()[i] = sendThenReceive(list[i], list[i + 1]) && (i == 0 || !batched.back()[i - 1]);
    }
  }
  // Each pass gives up one batch a rank stopped at (the lists run unbatched), so this ends.
  while (const auto stuck = stuckBatch(shape, lists, batched)) {
    batched[static_cast<size_t>(stuck->first)][stuck->second] = false;
  }
  return batched;
}

}  // namespace shardscope::config
