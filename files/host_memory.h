// The memory this host has free, and what of a trace it can therefore read: a trace is refused
// only when its recording would not fit, with the figures, not by a fixed cap (a long run's
// Chrome trace passes 4 GiB long before its recording fills a machine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardscope::files {

struct HostMemory {
  int64_t availableBytes = -1;  // -1: not known (then nothing is refused)
  std::string source;           // "MemAvailable in /proc/meminfo", or the cgroup's limit
};

// The smaller of the kernel's MemAvailable and what this process's cgroup (v2) still allows.
HostMemory hostMemoryAvailable();

// The most a trace file may hold when its recording takes `recordingPerFileByte` bytes of memory
// for each byte of the file, and how to say so when a file holds more; no limit when the free
// memory is not known.
struct TraceLimit {
  size_t maxBytes = SIZE_MAX;
  std::string why;  // "what this host's free memory (...) holds of its recording, ...: free memory, or ..."
};
TraceLimit traceLimit(double recordingPerFileByte, const HostMemory& host = hostMemoryAvailable());

}  // namespace shardscope::files
