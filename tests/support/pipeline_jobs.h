// Pipeline jobs for the tests, made from the real ones kept in tests/data/pytorch_pipelining_gloo
// (a target that includes this defines SHARDSCOPE_TEST_DATA).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope::testing {

// A 4-rank job made of the 1F1B job's two ranks, each twice, with pg_config naming a device mesh's
// pipeline groups (`groups`, each rank's own): rank r's file is `fromRank[r]`'s.
inline std::string fourRanksWithPipelineGroups(const std::string& name, const std::vector<int>& fromRank,
                                               const std::vector<std::vector<int>>& groups) {
  const std::string dir = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/1f1b";
  const std::string out = freshTempDir(name);
  for (int r = 0; r < 4; ++r) {
    std::ifstream in(dir + "/rank-" + std::to_string(fromRank[static_cast<size_t>(r)]) + ".pt.trace.json");
    auto trace = nlohmann::json::parse(in);
    trace["distributedInfo"] = {
        {"backend", "gloo"},
        {"rank", r},
        {"world_size", 4},
        {"pg_config",
         {{{"pg_name", "0"}, {"pg_desc", "default_pg"}, {"pg_size", 4}, {"ranks", {0, 1, 2, 3}}},
          {{"pg_name", "1"}, {"pg_desc", "mesh_pp"}, {"pg_size", 2}, {"ranks", groups[static_cast<size_t>(r)]}}}}};
    std::ofstream(out + "/rank-" + std::to_string(r) + ".pt.trace.json") << trace.dump();
  }
  return out;
}

}  // namespace shardscope::testing
