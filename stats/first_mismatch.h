// Where a hung job's ranks stopped agreeing: its collective logs (trace/collective_log.h) aligned by
// each group's sequence number, and the first number at which they differ, classified as PyTorch's
// Flight Recorder analyzer (torch.distributed.flight_recorder) does: a rank missing from a
// collective the others entered, then another op type, size, dtype or state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/collective_log.h"

namespace shardscope::stats {

enum class MismatchKind { MissingRank, OpType, Size, Dtype, State };
// "missing_rank", "op_type", "size", "dtype", "state": the summary's names.
const char* mismatchKindName(MismatchKind kind);

struct CollectiveMismatch {
  std::string group;
  int64_t seq = 0;
  MismatchKind kind = MismatchKind::MissingRank;
  std::vector<int> ranks;   // the odd ones out: those missing, or those unlike the most
  std::vector<int> agreed;  // the ranks that entered it alike (the most, or the first rank's kind)
  std::string expected;     // what `agreed` entered ("all_reduce [4] Float")
  std::string explanation;  // a sentence: who did what, and what it means
};

// The first mismatch over every group (the earliest entered, by the agreeing ranks' times, else
// the group's name), or none when every sequence number the ranks hold agrees. A rank whose
// Flight Recorder buffer dropped older entries is compared from the first number every rank holds.
std::optional<CollectiveMismatch> firstMismatch(const trace::CollectiveLogs& logs);

// One row of the side-by-side view: a group's sequence number and each rank's entry for it (null
// where the rank has none), in the order of the logs' ranks.
struct AlignedCollectives {
  std::string group;
  int64_t seq = 0;
  std::vector<const trace::LoggedCollective*> byRank;
};
// Every group's rows by sequence number (groups by name), the last `lastRows` of each group (0:
// all), pointing into `logs`.
std::vector<AlignedCollectives> alignBySequence(const trace::CollectiveLogs& logs, size_t lastRows = 0);

// Where each rank stands when nothing disagrees: "every rank entered all_reduce #5 of group 0 last,
// and none saw it end", or how far apart their last entries are.
std::string whereRanksStand(const trace::CollectiveLogs& logs);

}  // namespace shardscope::stats
