// A recorded collective animated as the textbook ring schedule (trace/ring_schedule.h): the ranks
// on a circle, each with its N chunks, and every step's transfers moving to the right neighbour
// (reduce-scatter steps add, all-gather steps copy), with the recorded size, the chunk size and the
// bytes each rank sends. The schedule is named as such, beside the backend that really ran it.
#pragma once

#include <string>

#include "trace/spans.h"

namespace shardscope::ui {

// Past this many ranks a ring draws each rank as one gauge of its chunks, not chunk by chunk.
constexpr int kRingRanksChunkByChunk = 12;

struct RingFrameStats {
  int steps = 0;           // steps of the schedule
  int stepsDone = 0;       // completed at this frame
  int transfersDrawn = 0;  // arrows of the step in progress
  int64_t bytesSentPerRank = 0;
  // Past kRingRanksChunkByChunk ranks: the ranks' gauges, their mean progress and how many are full.
  double meanProgress = 0;
  int ranksComplete = 0;
};

// `progress`: steps of the schedule done, fractional (0 .. steps). `backend`: the session's device
// line ("cpu / gloo"); `timingNote`: where the progress comes from (the playhead within the
// recorded span, or a replay at one step a second).
// `rank`: the rank that recorded `collective`; `worldRanks`: the run's ranks, and `tensorRanks` its
// tensor groups' (--tp; 1 without), to name the members of a sub-group's ring.
void drawRingAnimation(const trace::CollectiveSpan& collective, int rank, int worldRanks, int tensorRanks,
                       const std::string& backend, double progress, const std::string& timingNote, float width,
                       float height, RingFrameStats* stats = nullptr);

}  // namespace shardscope::ui
