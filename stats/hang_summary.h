// A hung job's summary from its ranks' collective logs (Flight Recorder dumps): each rank's last
// collective, and the first point where the ranks disagree (stats/first_mismatch.h), as JSON for
// `view DIR --summary F` and the tests.
#pragma once

#include <nlohmann/json.hpp>

#include "trace/collective_log.h"

namespace shardscope::stats {

// {"schema": "shardscope.flight_recorder/1", "source", "world_size", "ranks": [{"rank", "file",
// "entries", "last": {"group", "seq", "op", "state", "finished", "where"}}], "flight_recorder":
// {"first_mismatch": {"group", "seq", "kind", "ranks", "agreed", "expected", "explanation"} or
// null, "where_ranks_stand"}}.
nlohmann::json hangSummaryJson(const trace::CollectiveLogs& logs);

// The terminal's line on it: the first mismatch's explanation, or where the ranks stand.
std::string hangVerdict(const trace::CollectiveLogs& logs);

}  // namespace shardscope::stats
