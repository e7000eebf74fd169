#include "ui/rank_rows.h"

#include <algorithm>

#include "trace/format.h"

namespace shardscope::ui {

int rankGroupSize(int ranks) {
  if (ranks <= kRanksUnfolded) return 1;
  return (ranks + kRanksUnfolded - 1) / kRanksUnfolded;
}

bool recordedAnything(const trace::RankTimeline& t) {
  return !t.steps.empty() || !t.memory.empty() || !t.collectives.empty() || !t.compute.empty();
}

namespace {

// The group's rank that held the most at its peak (on a tie, the lowest that recorded anything):
// the row a folded group draws, so what the fold hides is never more than what it shows.
int highestPeakRank(const trace::RunRecording& recording, int first, int count) {
  int best = first;
  for (int r = first + 1; r < first + count; ++r) {
    const auto& candidate = recording.rank(r);
    const auto& held = recording.rank(best);
    if (candidate.peakTotal > held.peakTotal ||
        (candidate.peakTotal == held.peakTotal && recordedAnything(candidate) && !recordedAnything(held))) {
      best = r;
    }
  }
  return best;
}

}  // namespace

int ranksWithRecords(const trace::RunRecording& recording, int first, int count) {
  int n = 0;
  for (int r = first; r < first + count; ++r) n += recordedAnything(recording.rank(r));
  return n;
}

std::vector<RankRow> rankRows(const trace::RunRecording& recording, const std::set<int>& expanded,
                              bool foldUnrecorded) {
  const int ranks = recording.ranks();
  const int recorded = ranksWithRecords(recording, 0, ranks);
  std::vector<RankRow> rows;
  if (foldUnrecorded && recorded > 0 && recorded < ranks && recorded <= kRanksUnfolded) {
    std::vector<int> missing;
    for (int r = 0; r < ranks; ++r) {
      if (recordedAnything(recording.rank(r))) {
        rows.push_back({r});
      } else {
        missing.push_back(r);
      }
    }
    RankRow line{missing.front()};
    line.missingRanks = trace::formatRanks(missing);
    rows.push_back(line);
    return rows;
  }
  const int size = rankGroupSize(ranks);
  if (size == 1) {
    for (int r = 0; r < ranks; ++r) rows.push_back({r});
    return rows;
  }
  for (int first = 0, group = 0; first < ranks; first += size, ++group) {
    const int count = std::min(size, ranks - first);
    if (!expanded.count(group)) {
      rows.push_back({highestPeakRank(recording, first, count), group, first, count, /*folded=*/true});
      continue;
    }
    for (int r = first; r < first + count; ++r) rows.push_back({r, group, first, count, false, r == first});
  }
  return rows;
}

void toggleRankGroup(std::set<int>& expanded, int group) {
  if (!expanded.erase(group)) expanded.insert(group);
}

}  // namespace shardscope::ui
