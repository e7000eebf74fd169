// Who made the others wait. In DDP the gradient all-reduce makes every rank's backward end
// together, so a slow rank does not look slow at the end of anything: it is the *arrival* that
// tells. For every collective that all the ranks of its group recorded, the rank that issued it
// last, and how long each other member had waited for it since it issued its own.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/run_recording.h"

namespace shardscope::stats {

struct RankStraggling {
  int64_t collectives = 0;       // collectives of its groups that every member recorded
  int64_t withAStraggler = 0;    // of them, those one member issued clearly last (past the noise floor)
  int64_t lastArrivals = 0;      // and of those, the ones this rank issued last
  double waitCausedSeconds = 0;  // over every collective it issued last (a tie is no one's): the
                                 // time each other member had waited for it, summed over members
                                 // (a member's waits for it counted once where they overlap)
  // Of the collectives where one member arrived clearly last, the share where it was this rank.
  double lastArrivalShare() const {
    return withAStraggler > 0 ? static_cast<double>(lastArrivals) / static_cast<double>(withAStraggler) : 0.0;
  }
};

// Per rank, over the collectives the recording holds in detail. A collective is matched across
// ranks by its group (world, or the shard or replicate group whose members process_mesh gives)
// and its place in the rank's sequence of that group's collectives: every member issues its
// group's collectives in one order. A send and its receive (a pipeline's) are a group of two, the
// k-th send from one rank to another with the k-th receive the other posted from it; only where
// the sender came last did anyone wait (the receiver): a send waits for no receive.
//
// Ranks that leave one collective together arrive at the next within scheduling noise (FSDP's
// prefetched all-gathers right after the loss all-reduce): a last arrival counts only when it
// came more than the noise floor after every other member, 5 % of rank 0's median step time (at
// least 50 us). Waits count every last arrival, near-ties included, and a member's waits for the
// same rank once where they overlap: DDP's bucket all-reduces are in flight together, and summed
// one by one a run's waits once came to more than its steps' time (7.1 s in 6.1 s, on an H200).
std::vector<RankStraggling> stragglingOf(const trace::RunRecording& recording);

// One collective as one rank met it, for the window's stragglers view: when this rank issued it,
// when the group's last member did, and who that was. The rank waited from the first to the second.
struct CollectiveWait {
  int64_t issuedNs = 0;
  int64_t lastIssuedNs = 0;
  int lastRank = -1;   // -1: a tie at the last, no one's
  bool clear = false;  // the last came past the noise floor (it counts as the straggler)
};
// Per rank, each collective of its groups that every member recorded, in the order of its groups'
// sequences (not of time across groups).
std::vector<std::vector<CollectiveWait>> collectiveWaits(const trace::RunRecording& recording);

}  // namespace shardscope::stats
