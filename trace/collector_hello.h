// The first line a rank sends a collector (`shardscope listen`) before its event frames: who it is,
// the job's token when the collector asks for one, and from rank 0 the job's options. A connection
// whose first line is anything else is refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shardscope::trace {

struct CollectorHello {
  int rank = 0;
  int world = 0;
  std::string token;
  std::string configJson;  // rank 0: the job's options (run_config's JSON); "" from the others
};

std::string encodeCollectorHello(const CollectorHello& hello);  // ends with '\n'
// The hello in `line`, or nothing with `why` saying what was wrong with it.
std::optional<CollectorHello> decodeCollectorHello(std::string_view line, std::string& why);

}  // namespace shardscope::trace
