#include "stats/hang_summary.h"

#include "stats/first_mismatch.h"

namespace shardscope::stats {

namespace {

nlohmann::json rankJson(const trace::RankCollectiveLog& log) {
  nlohmann::json last = nullptr;
  if (!log.entries.empty()) {
    const auto& c = log.entries.back();
    last = {{"group", c.group},       {"seq", c.seq},       {"op", c.op},      {"state", c.state},
            {"finished", c.finished}, {"failed", c.failed}, {"where", c.where}};
  }
  return {{"rank", log.rank}, {"file", log.file}, {"entries", log.entries.size()}, {"last", last}};
}

}  // namespace

nlohmann::json hangSummaryJson(const trace::CollectiveLogs& logs) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& log : logs.ranks) ranks.push_back(rankJson(log));
  nlohmann::json first = nullptr;
  if (const auto m = firstMismatch(logs)) {
    first = {{"group", m->group},   {"seq", m->seq},           {"kind", mismatchKindName(m->kind)}, {"ranks", m->ranks},
             {"agreed", m->agreed}, {"expected", m->expected}, {"explanation", m->explanation}};
  }
  return {{"schema", "shardscope.flight_recorder/1"},
          {"source", logs.source},
          {"world_size", logs.worldSize},
          {"ranks", ranks},
          {"flight_recorder", {{"first_mismatch", first}, {"where_ranks_stand", whereRanksStand(logs)}}}};
}

std::string hangVerdict(const trace::CollectiveLogs& logs) {
  if (const auto m = firstMismatch(logs))
    return "first mismatch (" + std::string(mismatchKindName(m->kind)) + "): " + m->explanation;
  return "no mismatch: every collective the ranks hold agrees. " + whereRanksStand(logs);
}

}  // namespace shardscope::stats
