// --bind-cores rank: each rank process pinned to its own slice of the cores the run may use (the
// affinity it inherits), as `taskset` per rank would. Ranks that share a host (and, on one GPU,
// NCCL's proxy and socket threads, which do the socket transport's copying) then stop migrating
// onto each other's cores: a diagnostic for run-to-run variance. Off by default, as in torchrun.
// A launcher that already binds each rank (srun --cpu-bind, numactl) wants it off: the slice is
// cut again from the rank's own mask.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace shardscope::engine {

// The cores a thread may run on (sched_getaffinity; 0: the calling thread), in increasing order.
std::vector<int> allowedCores(pid_t thread = 0);

// Local rank `localRank`'s share of `allowed` among `localWorld` ranks: consecutive slices in
// order, as equal as they divide, the first (allowed.size() % localWorld) ranks one core more. With
// fewer cores than ranks, ranks share: localRank gets allowed[localRank % allowed.size()].
std::vector<int> coreSlice(const std::vector<int>& allowed, int localRank, int localWorld);

// "0-3", "0,2,4-5": the compact list `taskset -c` takes.
std::string describeCores(const std::vector<int>& cores);

// Pins every thread this process has now to `cores` (threads started later inherit the mask of the
// thread that starts them). Returns the cores the OS then reports for this thread; throws
// std::runtime_error naming the cores when it refuses, or when `cores` is empty.
std::vector<int> bindProcessToCores(const std::vector<int>& cores);

}  // namespace shardscope::engine
