#include "trace/rank_placements.h"

#include <algorithm>
#include <string>

namespace shardscope::trace {

namespace {

constexpr const char* kSeparator = " / ";
constexpr const char* kRanksOnOneGpu = " ranks on one GPU ";

// The length of the leading " / "-separated parts every placement has, separators included.
size_t sharedPrefixLength(const std::vector<std::string>& placements) {
  const std::string& first = placements.front();
  size_t shared = first.size();
  for (const auto& p : placements) {
    size_t i = 0;
    while (i < shared && i < p.size() && p[i] == first[i]) ++i;
    shared = i;
  }
  // Back to the end of the last whole part: "cpu / gloo / cores 0" and "... / cores 1" share
  // "cpu / gloo / ", not "cpu / gloo / cores ".
  const size_t separatorLength = std::char_traits<char>::length(kSeparator);
  if (shared < separatorLength) return 0;
  const size_t cut = first.rfind(kSeparator, shared - separatorLength);
  return cut == std::string::npos ? 0 : cut + separatorLength;
}

}  // namespace

std::string describeRankPlacements(const std::vector<std::string>& placements) {
  const auto reported = [](const std::string& p) { return !p.empty(); };
  if (std::none_of(placements.begin(), placements.end(), reported)) return "";
  const bool all = std::all_of(placements.begin(), placements.end(), reported);
  if (all && std::all_of(placements.begin(), placements.end(),
                         [&](const std::string& p) { return p == placements.front(); })) {
    return placements.front();
  }
  // Ranks are joined by "; ": a placement's own parts may hold commas ("cuda:0, one GPU per rank").
  const size_t shared = all ? sharedPrefixLength(placements) : 0;
  std::string text = placements.front().substr(0, shared);
  for (size_t r = 0; r < placements.size(); ++r) {
    text += (r == 0 ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
            (placements[r].empty() ? std::string("not reported") : placements[r].substr(shared));
  }
  return text;
}

std::string ranksOnOneGpuClause(int ranks, const std::string& method) {
  return std::to_string(ranks) + kRanksOnOneGpu + "(" + method + ")";
}

std::string ranksOnOneGpuIn(const std::string& placement) {
  const size_t phrase = placement.find(kRanksOnOneGpu);
  if (phrase == std::string::npos) return "";
  size_t from = phrase;
  while (from > 0 && placement[from - 1] >= '0' && placement[from - 1] <= '9') --from;
  const size_t close = placement.find(')', phrase);
  if (from == phrase || close == std::string::npos) return "";
  return placement.substr(from, close + 1 - from);
}

}  // namespace shardscope::trace
