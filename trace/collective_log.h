// Each rank's last collectives, in the order it entered them: what PyTorch's Flight Recorder keeps
// per rank (import/flight_recorder.h reads its dumps), laid side by side to find where a hung job's
// ranks stopped agreeing (stats/first_mismatch.h). The ranks' own process groups count their
// collectives: the n-th collective a rank enters in a group is that group's sequence number n on
// every rank, so a rank's entry n is compared with the others' entry n.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::trace {

struct LoggedCollective {
  std::string group;  // the process group's name, as the ranks share it ("0", "default_pg")
  int64_t seq = 0;    // the collective's sequence number in its group, from 1
  std::string op;     // "all_reduce", "all_gather", ... (the backend's prefix "gloo:", "nccl:" removed)
  std::string label;  // what it moves, where the recorder names it ("blocks.1"); "" in Flight Recorder's
  std::vector<std::vector<int64_t>> inputSizes, outputSizes;  // one shape per tensor
  std::vector<std::string> inputDtypes, outputDtypes;         // "Float", "BFloat16", ...
  // "scheduled", "started" or "completed" as the backend tracked it (gloo tracks none past
  // "scheduled"); `finished` is whether the rank saw it end (Flight Recorder's "retired").
  std::string state;
  bool finished = false;
  // The backend failed it (its timeout passed, a peer went away), so it never ended: shardscope's
  // own ranks say so (trace::EventKind::CollectiveFailed); Flight Recorder's dumps do not.
  bool failed = false;
  int64_t createdNs = 0;  // when the rank entered it, nanoseconds since the epoch (0: not recorded)
  std::string where;      // the caller's innermost frame outside torch ("train.py:42 in step"), if recorded
};

struct RankCollectiveLog {
  int rank = 0;
  std::string file;                       // where it was read from
  std::vector<LoggedCollective> entries;  // in the order the rank entered them
};

struct CollectiveLogs {
  std::string source;                    // "Flight Recorder dumps (version 2.10)"
  std::vector<RankCollectiveLog> ranks;  // by rank
  // Each process group's members, where the record names them; a group not named here has the
  // ranks whose logs hold it.
  std::map<std::string, std::vector<int>> groupRanks;
  std::map<std::string, std::string> groupDescriptions;  // "default_pg", where the record says
  int worldSize = 0;  // the largest group's size (the ranks that should have dumped), at least ranks.size()
};

// "group 0 (default_pg)", or "group 0" where the record describes it no further.
std::string groupLabel(const CollectiveLogs& logs, const std::string& group);
// "all_reduce [4] Float": the op, its first input's shape and dtype, for tables and notes.
std::string describeCollective(const LoggedCollective& c);
// "[3, 4]", "[3, 4], [2]" (several tensors), "[]" for none.
std::string shapesText(const std::vector<std::vector<int64_t>>& shapes);

}  // namespace shardscope::trace
