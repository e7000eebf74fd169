// A rank started without exec: forked from the controller, it runs the worker's code at once
// instead of loading the shardscope binary, and LibTorch with it, again (about 0.9 s of CPU a
// rank, most of a small run's cost). Only where that is safe; the ranks are exec'd otherwise.
#pragma once

#include <vector>

#include "config/run_config.h"

namespace shardscope::engine {

// Whether a run's ranks may be forked from this process without exec, now: it has a single
// thread (a child of a threaded process can inherit a lock that another thread held, so the
// window's process always execs), the ranks are CPU ranks (a child forked after its parent used
// CUDA cannot use it), and SHARDSCOPE_EXEC_RANKS is not 1 (which always execs, as a rank started
// by torchrun is).
bool mayForkRanks(const config::RunConfig& config);

// In the child just forked: makes it what exec would have made it (caught signals back to their
// defaults, every descriptor but 0 to 2 and `kept` closed, `envp` its environment), runs the
// rank's worker on `config` and exits with its status, without the controller's exit handlers.
[[noreturn]] void runForkedRank(const config::RunConfig& config, char** envp, const std::vector<int>& kept);

}  // namespace shardscope::engine
