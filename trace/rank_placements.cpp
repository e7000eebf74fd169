#include "trace/rank_placements.h"

#include <algorithm>
#include <string>

namespace shardscope::trace {

namespace {

constexpr const char* kSeparator = " / ";

// The leading " / "-separated parts every placement has, with their separators.
size_t sharedPrefixLength(const std::vector<const std::string*>& known) {
  size_t shared = known.front()->size();
  for (const auto* p : known) {
    size_t i = 0;
    while (i < shared && i < p->size() && (*p)[i] == (*known.front())[i]) ++i;
    shared = i;
  }
  // Back to the end of the last whole part: "cpu / gloo / cores 0" and "... / cores 1" share
  // "cpu / gloo / ", not "cpu / gloo / cores ".
  const size_t separatorLength = std::char_traits<char>::length(kSeparator);
  if (shared < separatorLength) return 0;
  const size_t cut = known.front()->rfind(kSeparator, shared - separatorLength);
  return cut == std::string::npos ? 0 : cut + separatorLength;
}

}  // namespace

std::string describeRankPlacements(const std::vector<std::string>& placements) {
  std::vector<const std::string*> known;
  for (const auto& p : placements) {
    if (!p.empty()) known.push_back(&p);
  }
  if (known.empty()) return "";
  if (std::all_of(known.begin(), known.end(), [&](const auto* p) { return *p == *known.front(); })) {
    return *known.front();
  }
  const size_t shared = sharedPrefixLength(known);
  std::string text = known.front()->substr(0, shared);
  bool first = true;
  for (size_t r = 0; r < placements.size(); ++r) {
    if (placements[r].empty()) continue;
    text += (first ? "" : ", ") + std::string("rank ") + std::to_string(r) + ": " + placements[r].substr(shared);
    first = false;
  }
  return text;
}

}  // namespace shardscope::trace
