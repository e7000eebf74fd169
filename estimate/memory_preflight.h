// Before any rank starts: does the run fit in the memory this host has free? A run that cannot is
// refused with both figures, instead of growing until the kernel's OOM killer ends it (--layers
// 100000 went past 8 GB in 11 s). The figure is the estimator's, a lower bound: model states plus
// (gpt) saved activations per rank, times the ranks, which on CPU share this host's memory. What
// the estimator leaves out (communication buffers, allocator slack, LibTorch itself) only adds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/run_config.h"
#include "files/host_memory.h"

namespace shardscope::estimate {

// What this host has free (files/host_memory.h).
using files::HostMemory;
using files::hostMemoryAvailable;

// Why `config` cannot fit in `host`, naming the prediction, what is free and the override; nothing
// when it fits, when --memory-check is off, on a GPU (device memory is the rank's own), or when the
// free memory is not known.
std::optional<std::string> memoryShortfall(const config::RunConfig& config, const HostMemory& host);

// memoryShortfall against this host, now.
std::optional<std::string> checkMemoryAvailable(const config::RunConfig& config);

}  // namespace shardscope::estimate
